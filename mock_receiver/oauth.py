"""OAuth 2.0 client credentials grant (RFC 6749 section 4.4): the ``POST /oauth/token`` endpoint.

Client authentication by HTTP Basic (section 2.3.1) or by ``client_id``/``client_secret`` in the form;
errors are section 5.2 JSON documents (not problem+json: an OAuth client library parses these).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from urllib.parse import parse_qsl, unquote_plus

from starlette.requests import Request
from starlette.responses import Response

from mock_receiver.auth_spec import OAuthClientCredentialsAuth
from mock_receiver.intake import read_admin_body, receiver_of
from mock_receiver.problems import ProblemError

TOKEN_PATH = "/oauth/token"  # noqa: S105 (a path, not a secret)
MAX_TOKEN_REQUEST_BYTES = 8192
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
_FORM = "application/x-www-form-urlencoded"


class OAuthError(Exception):
    """An RFC 6749 section 5.2 error answer."""

    def __init__(self, status: int, error: str, description: str, *, challenge: bool = False) -> None:
        super().__init__(f"{status} {error}")
        self.status = status
        self.error = error
        self.description = description
        self.challenge = challenge

    def response(self) -> Response:
        headers = dict(_NO_STORE)
        if self.challenge:
            headers["WWW-Authenticate"] = 'Basic realm="mock-receiver", charset="UTF-8"'
        body = {"error": self.error, "error_description": self.description}
        return Response(json.dumps(body, separators=(",", ":")).encode(), status_code=self.status,
                        media_type="application/json", headers=headers)


def _form(body: bytes) -> dict[str, str]:
    try:
        text = body.decode("utf-8")
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=32)
    except (UnicodeDecodeError, ValueError):
        raise OAuthError(400, "invalid_request", "the body is not a UTF-8 form") from None
    fields: dict[str, str] = {}
    for name, value in pairs:
        if name in fields:  # RFC 6749 section 3.2: a parameter is never sent twice
            raise OAuthError(400, "invalid_request", f"parameter {name[:64]!r} is repeated")
        fields[name] = value
    return fields


def _basic_client(header: str) -> tuple[str, str]:
    scheme, _, credentials = header.strip().partition(" ")
    if scheme.lower() != "basic":
        raise OAuthError(401, "invalid_client", "client authentication must use HTTP Basic", challenge=True)
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise OAuthError(401, "invalid_client", "malformed Basic credentials", challenge=True) from None
    client_id, colon, secret = decoded.partition(":")
    if not colon:
        raise OAuthError(401, "invalid_client", "malformed Basic credentials", challenge=True)
    # RFC 6749 section 2.3.1: both halves are form-urlencoded before Basic encoding.
    return unquote_plus(client_id), unquote_plus(secret)


def authenticate_client(spec: OAuthClientCredentialsAuth, expected_secret: str, authorization: str | None,
                        fields: dict[str, str]) -> None:
    in_form = "client_secret" in fields
    if authorization is not None and in_form:
        raise OAuthError(400, "invalid_request", "use one client authentication method, not two")
    if authorization is not None:
        client_id, secret = _basic_client(authorization)
    elif in_form:
        client_id, secret = fields.get("client_id", ""), fields["client_secret"]
    else:
        raise OAuthError(401, "invalid_client", "client authentication is required", challenge=True)
    same_id = hmac.compare_digest(client_id.encode("utf-8"), spec.client_id.encode("utf-8"))
    same_secret = hmac.compare_digest(secret.encode("utf-8"), expected_secret.encode("utf-8"))
    if not (same_id and same_secret):
        raise OAuthError(401, "invalid_client", "client authentication failed", challenge=authorization is not None)


def granted_scopes(spec: OAuthClientCredentialsAuth, requested: str | None) -> frozenset[str]:
    if requested is None:
        return frozenset(spec.scopes or ())
    wanted = frozenset(part for part in requested.split(" ") if part)
    if spec.scopes is not None and not wanted <= set(spec.scopes):
        raise OAuthError(400, "invalid_scope", "a requested scope is not available to this client")
    return wanted


async def token_endpoint(request: Request) -> Response:
    """Issue an access token for the client credentials grant."""
    gate = receiver_of(request).auth
    spec, secret = gate.oauth_client()
    if spec is None or secret is None:
        raise ProblemError(404, "not_found", "Not found", "this receiver does not issue OAuth tokens")
    try:
        if request.headers.get("content-type", "").split(";", 1)[0].strip().lower() != _FORM:
            raise OAuthError(400, "invalid_request", f"the body must be {_FORM}")
        fields = _form(await read_admin_body(request, MAX_TOKEN_REQUEST_BYTES))
        authenticate_client(spec, secret, request.headers.get("authorization"), fields)
        grant_type = fields.get("grant_type")
        if grant_type is None:
            raise OAuthError(400, "invalid_request", "grant_type is required")
        if grant_type != "client_credentials":
            raise OAuthError(400, "unsupported_grant_type", "only client_credentials is supported")
        scopes = granted_scopes(spec, fields.get("scope"))
    except OAuthError as error:
        gate.counters.count_token_refusal(error.error)
        return error.response()
    token = gate.tokens.issue(spec.token_ttl_seconds, scopes)
    body: dict[str, object] = {"access_token": token, "token_type": "Bearer", "expires_in": spec.token_ttl_seconds}
    if scopes:
        body["scope"] = " ".join(sorted(scopes))
    return Response(json.dumps(body, separators=(",", ":")).encode(), media_type="application/json",
                    headers=_NO_STORE)
