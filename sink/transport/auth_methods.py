"""API key (allowlisted header), HTTP Basic and mTLS providers of the auth seam.

Each resolves its secret through the ``CredentialResolverPort`` at send time (nothing cached, so a
rotated secret is used by the next request) and hands it to the transport only as ``SecretValue``.
Errors are ``CredentialUnavailable`` with a stable reason that names neither the value nor where
it lives. OAuth 2.0 client credentials is in ``sink.transport.oauth``.
"""

from __future__ import annotations

import base64
import re
import ssl
from collections.abc import Callable

from sink.contracts.secret import SecretValue
from sink.contracts.transport import CredentialResolverPort, CredentialUnavailable

# Visible ASCII, no leading/trailing space: anything else could break header framing, and h11
# would echo an illegal value in its error message.
_HEADER_SAFE = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]{0,4094}[\x21-\x7e])?\Z")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,64}\Z")
# Credential-bearing or framing headers an API key must never be put into.
_RESERVED_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "host", "content-length", "transfer-encoding",
    "content-type", "connection", "te", "upgrade", "expect",
})


class ApiKeyHeaderAuth:
    """``auth_provider: api_key_header``: the key in the one header the binding allowlists. A key in
    the query string is not offered at all (the seed forbids it by default: URLs leak into proxy,
    WAF and access logs)."""

    def __init__(self, resolver: CredentialResolverPort, credential_ref: str, header: str) -> None:
        if not _HEADER_NAME.fullmatch(header) or header.lower() in _RESERVED_HEADERS:
            raise ValueError("the API key header must be a plain, non-reserved header name")
        self._resolver = resolver
        self._ref = credential_ref
        self._header = header.lower()

    def credential_headers(self) -> tuple[tuple[str, SecretValue], ...]:
        key = self._resolver.resolve(self._ref)
        if not _HEADER_SAFE.fullmatch(key.reveal()):
            raise CredentialUnavailable("api_key_malformed")
        return ((self._header, key),)

    def __repr__(self) -> str:
        return f"ApiKeyHeaderAuth({self._header}: ***)"


def basic_header(user_and_password: SecretValue) -> SecretValue:
    """``Authorization: Basic`` from ``user:password`` (RFC 7617: the user id holds no colon, so
    the first colon splits; UTF-8 as its ``charset`` parameter recommends)."""
    raw = user_and_password.reveal()
    user, separator, password = raw.partition(":")
    if not separator or not user or not password or any(ord(char) < 0x20 or ord(char) == 0x7F for char in raw):
        raise CredentialUnavailable("basic_credential_malformed")
    encoded = base64.b64encode(raw.encode("utf-8")).decode("ascii")
    return SecretValue("Basic " + encoded)


class BasicAuth:
    """``auth_provider: basic``: one reference holding ``user:password`` (one secret to rotate, one
    place it lives; the user name is not a separate binding field because it is part of the
    credential, not of the receiver identity)."""

    def __init__(self, resolver: CredentialResolverPort, credential_ref: str) -> None:
        self._resolver = resolver
        self._ref = credential_ref

    def credential_headers(self) -> tuple[tuple[str, SecretValue], ...]:
        return (("authorization", basic_header(self._resolver.resolve(self._ref))),)

    def __repr__(self) -> str:
        return "BasicAuth(***)"


def file_path(reference: str) -> str:
    """The path of a ``file:///`` reference (the binding contract admits only that form for mTLS)."""
    if not reference.startswith("file:///"):
        raise CredentialUnavailable("mtls_reference_not_a_file")
    return reference.removeprefix("file://")


class MtlsAuth:
    """``auth_provider: mtls``: no header; the client certificate chain and private key are loaded
    into the TLS context by OpenSSL from their files, so the key never becomes a Python string
    (it cannot reach a log line or an exception). An optional passphrase reference is resolved
    only while the key is being loaded."""

    def __init__(self, resolver: CredentialResolverPort, key_ref: str, certificate_ref: str,
                 passphrase_ref: str | None = None) -> None:
        self._resolver = resolver
        self._key = file_path(key_ref)
        self._certificate = file_path(certificate_ref)
        self._passphrase_ref = passphrase_ref

    def credential_headers(self) -> tuple[tuple[str, SecretValue], ...]:
        return ()

    def _password(self) -> Callable[[], bytes] | None:
        ref = self._passphrase_ref
        if ref is None:
            return None
        resolver = self._resolver
        return lambda: resolver.resolve(ref).reveal().encode("utf-8")

    def load_into(self, context: ssl.SSLContext) -> None:
        """Raises ``CredentialUnavailable('mtls_identity_unloadable')`` for a missing file, a wrong
        passphrase or a key that does not match the certificate; OpenSSL's text is dropped."""
        try:
            context.load_cert_chain(self._certificate, self._key, password=self._password())
        except CredentialUnavailable:
            raise
        except (OSError, ValueError):  # ssl.SSLError is an OSError
            raise CredentialUnavailable("mtls_identity_unloadable") from None

    def __repr__(self) -> str:
        return "MtlsAuth(***)"
