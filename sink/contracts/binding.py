"""Connection-binding snapshot (seed: "Connection-binding snapshot").

A binding names *where* and *as whom* a profile is executed: the authority origin, the certified
remote identity, and a credential *reference*. It never holds a secret value: ``credential_ref``
is a locator (``vault://``, ``env://``, ``file://``) resolved into a ``SecretValue`` by each
process at the last moment.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal
from urllib.parse import urlsplit

from pydantic import AwareDatetime, StrictBool, field_validator, model_validator

from sink.contracts._base import ContractModel, Description, contract_error
from sink.contracts.binding_auth import (
    check_client_id,
    check_method_fields,
    check_scope,
    check_token_endpoint,
    oauth_semantics,
)

AuthProvider = Literal["bearer", "api_key_header", "basic", "oauth2_client_credentials", "mtls", "none"]
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})

_ENV_REF = re.compile(r"^env://[A-Z_][A-Z0-9_]{0,127}\Z")
_VAULT_REF = re.compile(r"^vault://[A-Za-z0-9_-][A-Za-z0-9_./-]{0,254}(?:#[A-Za-z0-9_-]{1,64})?\Z")
_FILE_REF = re.compile(r"^file:///[A-Za-z0-9_./-]{1,254}\Z")
_REMOTE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}\Z")
_POLICY_REF = re.compile(r"^[a-z0-9][a-z0-9._-]{0,126}@[1-9][0-9]{0,5}\Z")
_EVIDENCE_REF = re.compile(r"^[a-z][a-z0-9+.-]{0,15}://[\x21-\x7e]{1,300}\Z")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}\Z")


def check_credential_ref(value: str) -> str:
    """Accept only a reference; anything else is treated as a pasted secret (and never echoed)."""
    if not (_ENV_REF.fullmatch(value) or _VAULT_REF.fullmatch(value) or _FILE_REF.fullmatch(value)):
        raise contract_error(
            "contract.plaintext_secret",
            "credential_ref must be a reference (vault://path, env://NAME or file:///path), never a "
            "credential value; the value is not shown",
        )
    if "/../" in value or value.endswith("/..") or "/./" in value:
        raise contract_error("contract.path_traversal", "credential_ref may not contain '.' or '..' segments")
    return value


def check_authority(value: str) -> str:
    """A bare ``scheme://host[:port]`` origin: no userinfo, path, query or fragment."""
    if any(ord(char) < 0x21 or ord(char) == 0x7F for char in value):
        raise contract_error("contract.control_character", "the authority contains control characters or spaces")
    if not value.isascii():
        # Internationalised names must be given in their A-label (punycode) form: one spelling only.
        raise contract_error("contract.invalid_authority", "the authority must be ASCII (use the punycode host form)")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise contract_error("contract.invalid_authority", "the authority is not a valid origin") from None
    if parts.scheme not in ("https", "http"):
        raise contract_error("contract.insecure_authority", "the authority scheme must be https")
    if "@" in parts.netloc:
        raise contract_error(
            "contract.plaintext_secret", "the authority may not carry userinfo; the value is not shown"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment or "?" in value or "#" in value:
        raise contract_error(
            "contract.invalid_authority", "the authority is an origin only: no path, query or fragment"
        )
    if not parts.hostname or (port is not None and port == 0):
        raise contract_error("contract.invalid_authority", "the authority needs a host (and a non-zero port)")
    return value


class RemoteIdentity(ContractModel):
    mode: Literal["receiver_attested", "platform_attested"]
    evidence_ref: str
    verified_at: AwareDatetime
    valid_until: AwareDatetime

    @field_validator("evidence_ref")
    @classmethod
    def _evidence_ref(cls, value: str) -> str:
        if not _EVIDENCE_REF.fullmatch(value):
            raise contract_error("contract.invalid_value", "evidence_ref must be a scheme://reference")
        return value

    @model_validator(mode="after")
    def _window(self) -> RemoteIdentity:
        if self.valid_until <= self.verified_at:
            raise contract_error("contract.invalid_value", "valid_until must be after verified_at", field="valid_until")
        return self

    def is_valid_at(self, instant: datetime) -> bool:
        return self.verified_at <= instant < self.valid_until


class ConnectionBinding(ContractModel):
    connection_type: Literal["rest"]
    description: Description
    authority: str
    local: StrictBool = False
    auth_provider: AuthProvider
    api_key_header: str | None = None
    credential_ref: str | None = None
    # OAuth 2.0 client credentials: credential_ref is the client secret.
    oauth_token_endpoint: str | None = None
    oauth_client_id: str | None = None
    oauth_scope: str | None = None
    # mTLS: credential_ref is the private key file; the chain and an optional key passphrase.
    client_certificate_ref: str | None = None
    client_key_passphrase_ref: str | None = None
    remote_principal_id: str
    remote_account_id: str
    remote_resource_namespace: str
    remote_identity: RemoteIdentity | None = None
    tls_policy_ref: str
    network_policy_ref: str
    # Optional pin: when present the compiler refuses a binding whose semantics digest differs.
    binding_digest: str | None = None

    @field_validator("authority")
    @classmethod
    def _authority(cls, value: str) -> str:
        return check_authority(value)

    @field_validator("credential_ref", "client_certificate_ref", "client_key_passphrase_ref")
    @classmethod
    def _credential_ref(cls, value: str | None) -> str | None:
        return None if value is None else check_credential_ref(value)

    @field_validator("oauth_token_endpoint")
    @classmethod
    def _token_endpoint(cls, value: str | None) -> str | None:
        return None if value is None else check_token_endpoint(value)

    @field_validator("oauth_client_id")
    @classmethod
    def _client_id(cls, value: str | None) -> str | None:
        return None if value is None else check_client_id(value)

    @field_validator("oauth_scope")
    @classmethod
    def _scope(cls, value: str | None) -> str | None:
        return None if value is None else check_scope(value)

    @field_validator("api_key_header")
    @classmethod
    def _api_key_header(cls, value: str | None) -> str | None:
        if value is not None and (
            not re.fullmatch(r"[A-Za-z0-9-]{1,64}", value) or value.lower() in ("authorization", "cookie")
        ):
            raise contract_error("contract.invalid_value", "api_key_header must be a plain header name")
        return value

    @field_validator("remote_principal_id", "remote_account_id", "remote_resource_namespace")
    @classmethod
    def _remote_id(cls, value: str) -> str:
        if not _REMOTE_ID.fullmatch(value):
            raise contract_error("contract.invalid_value", "remote ids are 1-128 of A-Z a-z 0-9 . _ : @ -")
        return value

    @field_validator("tls_policy_ref", "network_policy_ref")
    @classmethod
    def _policy_ref(cls, value: str) -> str:
        if not _POLICY_REF.fullmatch(value):
            raise contract_error("contract.invalid_value", "policy refs look like 'name@version'")
        return value

    @field_validator("binding_digest")
    @classmethod
    def _digest(cls, value: str | None) -> str | None:
        if value is not None and not _DIGEST.fullmatch(value):
            raise contract_error("contract.invalid_value", "binding_digest must be sha256:<64 hex>")
        return value

    @model_validator(mode="after")
    def _secure(self) -> ConnectionBinding:
        parts = urlsplit(self.authority)
        loopback = (parts.hostname or "").lower() in LOOPBACK_HOSTS
        if parts.scheme == "http" and not (self.local and loopback):
            raise contract_error(
                "contract.insecure_authority",
                "plain http is allowed only for a loopback receiver with local: true",
                field="authority",
            )
        if self.local and not loopback:
            raise contract_error("contract.invalid_authority", "local: true requires a loopback authority",
                                 field="authority")
        self._check_auth(parts.scheme)
        check_method_fields(
            self.auth_provider, credential_ref=self.credential_ref, scheme=parts.scheme, loopback=loopback,
            fields={name: getattr(self, name) for name in (
                "oauth_token_endpoint", "oauth_client_id", "oauth_scope", "client_certificate_ref",
                "client_key_passphrase_ref")},
        )
        if not self.local and self.remote_identity is None:
            raise contract_error("contract.missing_field", "a non-local binding needs an attested remote_identity",
                                 field="remote_identity")
        return self

    def _check_auth(self, scheme: str) -> None:
        if self.auth_provider == "none":
            if not self.local:
                raise contract_error(
                    "contract.insecure_authority", "auth_provider none is allowed only for local: true",
                    field="auth_provider",
                )
            if self.credential_ref is not None:
                raise contract_error("contract.invalid_value", "auth_provider none takes no credential_ref",
                                     field="credential_ref")
        elif self.credential_ref is None:
            raise contract_error("contract.missing_field", "this auth_provider needs a credential_ref",
                                 field="credential_ref")
        if (self.auth_provider == "api_key_header") != (self.api_key_header is not None):
            raise contract_error("contract.invalid_value", "api_key_header is required exactly for api_key_header auth",
                                 field="api_key_header")

    @property
    def authentication_semantics(self) -> dict[str, str | None]:
        """What the receiver sees of authentication, minus any secret or its locator."""
        header = None if self.api_key_header is None else self.api_key_header.lower()
        return {"provider": self.auth_provider, "api_key_header": header,
                **oauth_semantics(self.oauth_token_endpoint, self.oauth_client_id, self.oauth_scope)}

