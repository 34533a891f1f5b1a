"""Checking the credential of every data-plane request against the behaviour's ``auth:`` section.

One gate per receiver process: it holds the expected secrets (read once when a behaviour is loaded,
never logged or returned), the OAuth tokens it issued, and in-memory counters the admin API shows.
Refusals are problem+json: ``401`` with a ``WWW-Authenticate`` challenge when the credential is
missing or wrong, ``403`` when it is valid but not for this resource (mTLS subject, OAuth scope).
A refused request never reaches a handler, so it is not in the ledger: the counters record it.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from mock_receiver.auth_spec import (
    NO_AUTH,
    ApiKeyAuth,
    AuthSpec,
    BasicAuth,
    BearerAuth,
    MutualTlsAuth,
    NoAuth,
    OAuthClientCredentialsAuth,
)
from mock_receiver.behaviour import Behaviour
from mock_receiver.host_guard import is_admin_path
from mock_receiver.oauth_tokens import TokenStore
from mock_receiver.problems import ProblemError
from mock_receiver.secret_sources import read_secret

REALM = "mock-receiver"
UNCHECKED_PATHS = frozenset({"/oauth/token"})
"""The token endpoint authenticates the client itself (RFC 6749 section 2.3)."""


@dataclass
class AuthCounters:
    accepted: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    """Refused data requests by problem slug."""
    token_refused: Counter[str] = field(default_factory=Counter)
    """Refused token requests by RFC 6749 error code."""
    with_authorization_header: int = 0
    """Data requests that carried an Authorization header, whatever the method (also ``none``): a test
    proving that no credential reached a listener reads this."""

    def count_token_refusal(self, error: str) -> None:
        self.token_refused[error] += 1

    def reset(self) -> None:
        self.accepted = 0
        self.with_authorization_header = 0
        self.refused.clear()
        self.token_refused.clear()


def _refusal(status: int, slug: str, detail: str, challenge: str) -> ProblemError:
    title = "Unauthorized" if status == 401 else "Forbidden"
    return ProblemError(status, slug, title, detail, headers={"WWW-Authenticate": challenge})


def _bearer_challenge(error: str | None = None, scope: str | None = None) -> str:
    parts = [f'Bearer realm="{REALM}"']
    if error is not None:
        parts.append(f'error="{error}"')
    if scope is not None:
        parts.append(f'scope="{scope}"')
    return ", ".join(parts)


def _equal(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _authorization(headers: Headers, scheme: str) -> str | None:
    """The credentials of the one ``Authorization`` header using ``scheme``; None when absent or another
    scheme. Two Authorization headers are ambiguous and count as a wrong credential."""
    values = headers.getlist("authorization")
    if len(values) > 1:
        return ""
    if not values:
        return None
    given_scheme, _, credentials = values[0].strip().partition(" ")
    if given_scheme.lower() != scheme.lower():
        return None
    return credentials.strip()


def _certificate_names(tls: Mapping[str, object] | None) -> tuple[list[str], list[str]] | None:
    """(subject common names, subjectAltName values) of the verified client certificate, or None."""
    if not tls:
        return None
    parsed = tls.get("client_cert_dict")
    if not isinstance(parsed, dict) or not parsed:
        return None
    names = [str(value) for rdn in parsed.get("subject", ()) for key, value in rdn if key == "commonName"]
    alt = [str(value) for _, value in parsed.get("subjectAltName", ())]
    return names, alt


class AuthGate:
    """The expected credential of the active behaviour, and what was issued and refused under it."""

    def __init__(self, spec: AuthSpec = NO_AUTH) -> None:
        self.spec: AuthSpec = NO_AUTH
        self._secret: str | None = None
        self.tokens = TokenStore()
        self.counters = AuthCounters()
        self.configure(spec)

    def configure(self, spec: AuthSpec) -> None:
        """Read the secret ``spec`` points at (raises ``AuthConfigError`` and changes nothing when it
        cannot be read). OAuth tokens survive a switch that keeps the same OAuth client."""
        secret = self._read(spec)
        old = self.spec
        same_client = (isinstance(spec, OAuthClientCredentialsAuth) and isinstance(old, OAuthClientCredentialsAuth)
                       and spec.client_id == old.client_id and secret == self._secret)
        if not same_client:
            self.tokens = TokenStore()
        self.spec, self._secret = spec, secret

    @staticmethod
    def _read(spec: AuthSpec) -> str | None:
        if isinstance(spec, BearerAuth):
            return read_secret(spec.token_env, spec.token_file, "bearer token")
        if isinstance(spec, ApiKeyAuth):
            return read_secret(spec.key_env, spec.key_file, "API key")
        if isinstance(spec, BasicAuth):
            return read_secret(spec.password_env, spec.password_file, "Basic password")
        if isinstance(spec, OAuthClientCredentialsAuth):
            return read_secret(spec.client_secret_env, spec.client_secret_file, "OAuth client secret")
        return None

    def oauth_client(self) -> tuple[OAuthClientCredentialsAuth | None, str | None]:
        if isinstance(self.spec, OAuthClientCredentialsAuth):
            return self.spec, self._secret
        return None, None

    def check(self, headers: Headers, tls: Mapping[str, object] | None) -> ProblemError | None:
        """None when the request may proceed; else the refusal (counted either way)."""
        problem = self._problem(headers, tls)
        if "authorization" in headers:
            self.counters.with_authorization_header += 1
        if problem is None:
            self.counters.accepted += 1
        else:
            self.counters.refused[problem.slug] += 1
        return problem

    def _problem(self, headers: Headers, tls: Mapping[str, object] | None) -> ProblemError | None:
        spec, secret = self.spec, self._secret or ""
        if isinstance(spec, NoAuth):
            return None
        if isinstance(spec, BearerAuth):
            return self._check_bearer(headers, secret)
        if isinstance(spec, ApiKeyAuth):
            return self._check_api_key(headers, spec, secret)
        if isinstance(spec, BasicAuth):
            return self._check_basic(headers, spec, secret)
        if isinstance(spec, OAuthClientCredentialsAuth):
            return self._check_oauth(headers, spec)
        return self._check_mtls(spec, tls)

    @staticmethod
    def _check_bearer(headers: Headers, secret: str) -> ProblemError | None:
        given = _authorization(headers, "Bearer")
        if given is None:
            return _refusal(401, "authentication_required", "a bearer token is required", _bearer_challenge())
        if not _equal(given, secret):
            return _refusal(401, "invalid_credentials", "the bearer token is not valid",
                            _bearer_challenge("invalid_token"))
        return None

    @staticmethod
    def _check_api_key(headers: Headers, spec: ApiKeyAuth, secret: str) -> ProblemError | None:
        challenge = f'ApiKey realm="{REALM}", header="{spec.header}"'
        values = headers.getlist(spec.header)
        if not values:
            return _refusal(401, "authentication_required", f"an API key in the {spec.header} header is required",
                            challenge)
        if len(values) > 1 or not _equal(values[0], secret):
            return _refusal(401, "invalid_credentials", "the API key is not valid", challenge)
        return None

    @staticmethod
    def _check_basic(headers: Headers, spec: BasicAuth, secret: str) -> ProblemError | None:
        challenge = f'Basic realm="{REALM}", charset="UTF-8"'
        given = _authorization(headers, "Basic")
        if given is None:
            return _refusal(401, "authentication_required", "HTTP Basic credentials are required", challenge)
        try:
            user, colon, password = base64.b64decode(given, validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            user, colon, password = "", "", ""
        # Both compared every time, so the answer's timing does not tell a right user from a wrong one.
        same_user, same_password = _equal(user, spec.username), _equal(password, secret)
        if not (colon and same_user and same_password):
            return _refusal(401, "invalid_credentials", "the Basic credentials are not valid", challenge)
        return None

    def _check_oauth(self, headers: Headers, spec: OAuthClientCredentialsAuth) -> ProblemError | None:
        given = _authorization(headers, "Bearer")
        if given is None:
            return _refusal(401, "authentication_required", "an access token from /oauth/token is required",
                            _bearer_challenge())
        issued, valid = self.tokens.lookup(given)
        if issued is None:
            return _refusal(401, "invalid_credentials", "the access token is not valid",
                            _bearer_challenge("invalid_token"))
        if not valid:
            return _refusal(401, "token_expired", "the access token expired", _bearer_challenge("invalid_token"))
        if spec.required_scope is not None and spec.required_scope not in issued.scopes:
            return _refusal(403, "insufficient_scope", f"the access token lacks the scope {spec.required_scope}",
                            _bearer_challenge("insufficient_scope", spec.required_scope))
        return None

    @staticmethod
    def _check_mtls(spec: MutualTlsAuth, tls: Mapping[str, object] | None) -> ProblemError | None:
        challenge = f'MutualTLS realm="{REALM}"'
        names = _certificate_names(tls)
        if names is None:
            return _refusal(401, "client_certificate_required",
                            "a client certificate verified by the receiver's client CA is required", challenge)
        common_names, alt_names = names
        if spec.subject_cn is not None and spec.subject_cn not in common_names:
            return _refusal(403, "forbidden_principal", "the client certificate's subject is not the expected one",
                            challenge)
        if spec.subject_san is not None and spec.subject_san not in alt_names:
            return _refusal(403, "forbidden_principal",
                            "the client certificate's subjectAltName is not the expected one", challenge)
        return None


class GateSource(Protocol):
    """What holds the process's gate (the receiver); the middleware looks it up per request, so a
    behaviour switch takes effect at once."""

    auth: AuthGate
    behaviour: Behaviour


class AuthMiddleware:
    """Refuses a data-plane request before routing unless the gate accepts it; the admin API and the
    token endpoint pass untouched."""

    def __init__(self, app: ASGIApp, gate_of: GateSource) -> None:
        self.app = app
        self.gate_of = gate_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or path in UNCHECKED_PATHS or is_admin_path(path):
            await self.app(scope, receive, send)
            return
        extensions = scope.get("extensions") or {}
        problem = self.gate_of.auth.check(Headers(scope=scope), extensions.get("tls"))
        if problem is not None:
            await _drain(receive, self.gate_of.behaviour.limits.max_body_bytes)
            await problem.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def _drain(receive: Receive, limit: int) -> None:
    """Read and drop the refused request's body (up to the behaviour's body limit) before answering.
    Closing a connection whose body is still arriving makes the kernel reset it, and the client may
    then see a transport error, "effect unknown", instead of the definite 401 that proves nothing
    was applied."""
    size = 0
    while size <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return  # the client is gone
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


__all__ = ["AuthCounters", "AuthGate", "AuthMiddleware", "GateSource"]
