"""The authentication seam: an ``AuthProvider`` turns a binding's auth method into credential
headers, resolved at send time and carried only as ``SecretValue`` until the transport reveals
them into the outgoing request.

Bearer (RFC 6750) is here; API key (allowlisted header), Basic and mTLS are in
``auth_methods``, OAuth 2.0 client credentials in ``oauth``; each is one factory in
``AUTH_FACTORIES``. mTLS contributes to the TLS context instead of a header, which is why a
provider is an object and not a header function.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sink.contracts.secret import SecretValue
from sink.contracts.transport import CredentialResolverPort, CredentialUnavailable
from sink.transport.auth_methods import ApiKeyHeaderAuth, BasicAuth, MtlsAuth
from sink.transport.oauth import OAuthSettings

# RFC 6750 b64token: anything else could break header framing (and h11 would echo it in an error).
_B64TOKEN = re.compile(r"^[A-Za-z0-9\-._~+/]+=*\Z")


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


@dataclass(frozen=True, slots=True)
class AuthSettings:
    """Everything a factory may need from the binding (references and public identifiers only)."""

    resolver: CredentialResolverPort
    credential_ref: str | None
    api_key_header: str | None = None
    oauth: OAuthSettings | None = None
    client_certificate_ref: str | None = None
    client_key_passphrase_ref: str | None = None

    def ref(self) -> str:
        if self.credential_ref is None:
            raise CredentialUnavailable("missing_credential_ref")
        return self.credential_ref


AuthFactory = Callable[[AuthSettings], AuthProvider]


def _api_key(settings: AuthSettings) -> AuthProvider:
    if settings.api_key_header is None:
        raise CredentialUnavailable("missing_api_key_header")
    return ApiKeyHeaderAuth(settings.resolver, settings.ref(), settings.api_key_header)


def _mtls(settings: AuthSettings) -> AuthProvider:
    if settings.client_certificate_ref is None:
        raise CredentialUnavailable("missing_client_certificate_ref")
    return MtlsAuth(settings.resolver, settings.ref(), settings.client_certificate_ref,
                    settings.client_key_passphrase_ref)


def _oauth(settings: AuthSettings) -> AuthProvider:
    if settings.oauth is None:
        raise CredentialUnavailable("missing_oauth_settings")
    return settings.oauth.provider(settings.resolver, settings.ref())


AUTH_FACTORIES: dict[str, AuthFactory] = {
    "none": lambda settings: NoAuth(),
    "bearer": lambda settings: BearerAuth(settings.resolver, settings.ref()),
    "api_key_header": _api_key,
    "basic": lambda settings: BasicAuth(settings.resolver, settings.ref()),
    "oauth2_client_credentials": _oauth,
    "mtls": _mtls,
}


class UnsupportedAuth(Exception):
    def __init__(self, method: str) -> None:
        super().__init__(f"auth provider {method!r} is not implemented by this transport")
        self.method = method


def auth_for(method: str, credential_ref: str | None, resolver: CredentialResolverPort, *,
             api_key_header: str | None = None, oauth: OAuthSettings | None = None,
             client_certificate_ref: str | None = None, client_key_passphrase_ref: str | None = None) -> AuthProvider:
    """The provider for a binding's ``auth_provider``; ``UnsupportedAuth`` for a method not built
    (a plan using it must fail before any send, not fall back to no authentication)."""
    factory = AUTH_FACTORIES.get(method)
    if factory is None:
        raise UnsupportedAuth(method)
    return factory(AuthSettings(resolver, credential_ref, api_key_header, oauth, client_certificate_ref,
                                client_key_passphrase_ref))
