"""The authentication seam: an ``AuthProvider`` turns a binding's auth method into credential
headers, resolved at send time and carried only as ``SecretValue`` until the transport reveals
them into the outgoing request.

Bearer (RFC 6750) is implemented. The wire-security work adds API key, Basic, OAuth client
credentials and mTLS by registering a factory in ``AUTH_FACTORIES``; mTLS will also contribute
to the TLS context, which is why a provider is an object and not a header function.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from sink.contracts.secret import SecretValue
from sink.contracts.transport import CredentialResolverPort, CredentialUnavailable

# RFC 6750 b64token: anything else could break header framing (and h11 would echo it in an error).
_B64TOKEN = re.compile(r"^[A-Za-z0-9\-._~+/]+=*$")


class AuthProvider(Protocol):
    def credential_headers(self) -> tuple[tuple[str, SecretValue], ...]:
        """Headers to add to this request; raises ``CredentialUnavailable``."""


class NoAuth:
    """``auth_provider: none`` (loopback receivers only, enforced by the binding contract)."""

    def credential_headers(self) -> tuple[tuple[str, SecretValue], ...]:
        return ()


class BearerAuth:
    def __init__(self, resolver: CredentialResolverPort, credential_ref: str) -> None:
        self._resolver = resolver
        self._ref = credential_ref

    def credential_headers(self) -> tuple[tuple[str, SecretValue], ...]:
        token = self._resolver.resolve(self._ref)
        if not _B64TOKEN.fullmatch(token.reveal()):
            raise CredentialUnavailable("bearer_token_malformed")
        return (("authorization", SecretValue("Bearer " + token.reveal())),)

    def __repr__(self) -> str:
        return "BearerAuth(***)"


AuthFactory = Callable[[CredentialResolverPort, "str | None"], AuthProvider]


def _bearer(resolver: CredentialResolverPort, ref: str | None) -> AuthProvider:
    if ref is None:
        raise CredentialUnavailable("missing_credential_ref")
    return BearerAuth(resolver, ref)


AUTH_FACTORIES: dict[str, AuthFactory] = {
    "none": lambda resolver, ref: NoAuth(),
    "bearer": _bearer,
}


class UnsupportedAuth(Exception):
    def __init__(self, method: str) -> None:
        super().__init__(f"auth provider {method!r} is not implemented by this transport")
        self.method = method


def auth_for(method: str, credential_ref: str | None, resolver: CredentialResolverPort) -> AuthProvider:
    """The provider for a binding's ``auth_provider``; ``UnsupportedAuth`` for a method not yet built
    (a plan using it must fail before any send, not fall back to no authentication)."""
    factory = AUTH_FACTORIES.get(method)
    if factory is None:
        raise UnsupportedAuth(method)
    return factory(resolver, credential_ref)
