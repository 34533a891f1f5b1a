"""Per-method rules of a binding's authentication fields (seed: "Security, timeout, and operations
policy": bearer, API key in an allowlisted header, HTTP Basic, OAuth 2.0 client credentials, mTLS).

Pure checks, called by ``ConnectionBinding``'s model validator. Every field here is a non-secret
*reference* or a public identifier; the secrets themselves are resolved at send time. The fields
that change what the receiver sees of authentication (the token endpoint, client id and scope of
OAuth) enter ``authentication_semantics`` and so the binding semantics digest; the references do
not (rotating a secret or the file it lives in keeps the receiver identity).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from sink.contracts._base import contract_error

_CLIENT_ID = re.compile(r"^[\x21-\x7e]{1,256}\Z")
# RFC 6749 3.3: scope tokens are NQCHAR (no space, quote or backslash), joined by single spaces.
_SCOPE = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{1,128}(?: [\x21\x23-\x5b\x5d-\x7e]{1,128}){0,31}\Z")
_TOKEN_PATH = re.compile(r"^/[A-Za-z0-9._~!$&'()*+,;=:@/-]{0,254}\Z")

OAUTH_FIELDS = ("oauth_token_endpoint", "oauth_client_id", "oauth_scope")
MTLS_FIELDS = ("client_certificate_ref", "client_key_passphrase_ref")


def check_token_endpoint(value: str) -> str:
    """An absolute ``https`` URL (``http`` only on loopback, checked with ``local``) with a plain
    path: no userinfo, query or fragment, no dot segments. Same-origin-or-allowlisted is a network
    policy decision, made where the policy is loaded."""
    if not value.isascii() or any(ord(char) < 0x21 or ord(char) == 0x7F for char in value):
        raise contract_error("contract.invalid_value", "oauth_token_endpoint must be visible ASCII")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise contract_error("contract.invalid_value", "oauth_token_endpoint is not a valid URL") from None
    if parts.scheme not in ("https", "http") or not parts.hostname or port == 0:
        raise contract_error("contract.insecure_authority", "oauth_token_endpoint must be an https URL")
    if "@" in parts.netloc:
        raise contract_error("contract.plaintext_secret",
                             "oauth_token_endpoint may not carry userinfo; the value is not shown")
    if parts.query or parts.fragment or "?" in value or "#" in value:
        raise contract_error("contract.invalid_value", "oauth_token_endpoint takes no query or fragment")
    segments = parts.path.split("/")
    if not _TOKEN_PATH.fullmatch(parts.path) or "." in segments or ".." in segments or "" in segments[1:]:
        raise contract_error("contract.path_traversal", "oauth_token_endpoint needs a plain absolute path")
    return value


def check_client_id(value: str) -> str:
    if not _CLIENT_ID.fullmatch(value) or ":" in value:
        # A colon would split differently in client_secret_basic (RFC 6749 2.3.1).
        raise contract_error("contract.invalid_value", "oauth_client_id is 1-256 visible ASCII, no ':'")
    return value


def check_scope(value: str) -> str:
    if not _SCOPE.fullmatch(value):
        raise contract_error("contract.invalid_value", "oauth_scope is space-separated RFC 6749 scope tokens")
    return value


def _refuse_fields(present: dict[str, object], names: tuple[str, ...], method: str) -> None:
    for name in names:
        if present.get(name) is not None:
            raise contract_error("contract.invalid_value", f"{name} belongs to {method} auth only", field=name)


def check_method_fields(auth_provider: str, *, fields: dict[str, object], credential_ref: str | None,
                        scheme: str, loopback: bool) -> None:
    """The method-specific fields are present exactly for their method."""
    if auth_provider == "oauth2_client_credentials":
        for name in ("oauth_token_endpoint", "oauth_client_id"):
            if fields.get(name) is None:
                raise contract_error("contract.missing_field", f"oauth2_client_credentials needs {name}", field=name)
        endpoint = str(fields["oauth_token_endpoint"])
        if urlsplit(endpoint).scheme != "https" and not loopback:
            raise contract_error("contract.insecure_authority",
                                 "a plain http token endpoint is allowed only for a loopback binding",
                                 field="oauth_token_endpoint")
    else:
        _refuse_fields(fields, OAUTH_FIELDS, "oauth2_client_credentials")
    if auth_provider == "mtls":
        if scheme != "https":
            raise contract_error("contract.insecure_authority", "mtls needs an https authority", field="authority")
        if fields.get("client_certificate_ref") is None:
            raise contract_error("contract.missing_field", "mtls needs client_certificate_ref",
                                 field="client_certificate_ref")
        for name, ref in (("credential_ref", credential_ref), ("client_certificate_ref",
                                                                fields.get("client_certificate_ref"))):
            # OpenSSL loads the key and chain from a path itself: the key never becomes a Python str.
            if not str(ref).startswith("file:///"):
                raise contract_error("contract.invalid_value", f"mtls {name} must be a file:/// reference",
                                     field=name)
    else:
        _refuse_fields(fields, MTLS_FIELDS, "mtls")


def oauth_semantics(endpoint: str | None, client_id: str | None, scope: str | None) -> dict[str, str | None]:
    """What the receiver's authorization server sees: endpoint (scheme and host case-folded),
    client id and scope. Only added for OAuth bindings, so every other binding keeps its digest."""
    if endpoint is None:
        return {}
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    canonical = f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}:{port}{parts.path}"
    return {"oauth_token_endpoint": canonical, "oauth_client_id": client_id, "oauth_scope": scope}


__all__ = [
    "MTLS_FIELDS",
    "OAUTH_FIELDS",
    "check_client_id",
    "check_method_fields",
    "check_scope",
    "check_token_endpoint",
    "oauth_semantics",
]
