"""The behaviour file's closed ``auth:`` section: which credential the data API expects.

A secret is never a value of this schema: each one is a reference to where the receiver reads it
(an environment variable or a file), so a test hands the very same value to the sink through its
``env://`` or ``file://`` credential reference, and a behaviour document (also the one the admin API
returns) can be shown or logged whole.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
_HEADER_NAME = r"^[A-Za-z0-9-]{1,64}$"
# RFC 6749 appendix A: a scope token is printable ASCII without space, quote or backslash.
_SCOPE_TOKEN = r"^[\x21\x23-\x5B\x5D-\x7E]{1,128}$"  # noqa: S105 (a pattern, not a secret)
_FORBIDDEN_API_KEY_HEADERS = frozenset({"authorization", "cookie", "host", "content-type", "content-length",
                                        "transfer-encoding", "idempotency-key"})

EnvName = Annotated[str, Field(pattern=_ENV_NAME)]
FilePath = Annotated[str, Field(min_length=1, max_length=4096)]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _exactly_one(model: BaseModel, stem: str) -> None:
    env, file = getattr(model, f"{stem}_env"), getattr(model, f"{stem}_file")
    if (env is None) == (file is None):
        raise ValueError(f"set exactly one of {stem}_env, {stem}_file")


class NoAuth(_Closed):
    method: Literal["none"]


class BearerAuth(_Closed):
    method: Literal["bearer"]
    token_env: EnvName | None = None
    token_file: FilePath | None = None

    @model_validator(mode="after")
    def _one_source(self) -> BearerAuth:
        _exactly_one(self, "token")
        return self


class ApiKeyAuth(_Closed):
    method: Literal["api_key_header"]
    header: str = Field(default="X-API-Key", pattern=_HEADER_NAME)
    key_env: EnvName | None = None
    key_file: FilePath | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ApiKeyAuth:
        _exactly_one(self, "key")
        if self.header.lower() in _FORBIDDEN_API_KEY_HEADERS:
            raise ValueError(f"header {self.header!r} cannot carry an API key")
        return self


class BasicAuth(_Closed):
    method: Literal["basic"]
    username: str = Field(min_length=1, max_length=256, pattern=r"^[^:\x00-\x1f\x7f]+$")
    """Not a secret (it names the principal); RFC 7617 forbids a colon in it."""
    password_env: EnvName | None = None
    password_file: FilePath | None = None

    @model_validator(mode="after")
    def _one_source(self) -> BasicAuth:
        _exactly_one(self, "password")
        return self


class OAuthClientCredentialsAuth(_Closed):
    method: Literal["oauth2_client_credentials"]
    client_id: str = Field(min_length=1, max_length=256, pattern=r"^[\x20-\x7E]+$")
    client_secret_env: EnvName | None = None
    client_secret_file: FilePath | None = None
    token_ttl_seconds: int = Field(default=300, ge=1, le=86_400)
    """Lifetime of an issued access token (``expires_in``), on the process's monotonic clock."""
    scopes: list[Annotated[str, Field(pattern=_SCOPE_TOKEN)]] | None = None
    """Scopes a client may request; None: any scope is granted as requested."""
    required_scope: str | None = Field(default=None, pattern=_SCOPE_TOKEN)
    """A data request whose token was not granted this scope is a 403 insufficient_scope."""

    @model_validator(mode="after")
    def _one_source(self) -> OAuthClientCredentialsAuth:
        _exactly_one(self, "client_secret")
        if self.required_scope is not None and self.scopes is not None and self.required_scope not in self.scopes:
            raise ValueError("required_scope must be one of scopes")
        return self


class MutualTlsAuth(_Closed):
    method: Literal["mtls"]
    subject_cn: str | None = Field(default=None, min_length=1, max_length=64)
    """Expected common name of the client certificate's subject."""
    subject_san: str | None = Field(default=None, min_length=1, max_length=256)
    """Expected subjectAltName value (DNS name, URI, e-mail or IP address); any one entry must equal it."""

    @model_validator(mode="after")
    def _some_subject(self) -> MutualTlsAuth:
        if self.subject_cn is None and self.subject_san is None:
            raise ValueError("mtls needs subject_cn or subject_san (or both)")
        return self


AuthSpec = Annotated[
    NoAuth | BearerAuth | ApiKeyAuth | BasicAuth | OAuthClientCredentialsAuth | MutualTlsAuth,
    Field(discriminator="method"),
]
NO_AUTH = NoAuth(method="none")

__all__ = ["NO_AUTH", "ApiKeyAuth", "AuthSpec", "BasicAuth", "BearerAuth", "MutualTlsAuth", "NoAuth",
           "OAuthClientCredentialsAuth"]
