"""OAuth 2.0 client credentials (RFC 6749 4.4) behind the auth seam.

The access token is fetched from the binding's token endpoint through a ``RestTransportPort`` of
its own (so it gets the same fixed authority, TLS policy, address allowlist, bounded response
parsing and no redirects as a mutation), cached in this process only, and refreshed before it
expires. It is held only as ``SecretValue`` and is never written anywhere: not to the journal (the
binding semantics digest has the endpoint, client id and scope, never a token), not to evidence,
not to an exception. A refresh changes nothing the sink derives identities from, so a delivery
that outlives a token keeps every identity and its operation.

The client authenticates with ``client_secret_basic`` (RFC 6749 2.3.1: id and secret
form-urlencoded, then Basic), the method every authorization server must support.
"""

from __future__ import annotations

import base64
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from sink.contracts.profile_policy import TimeoutVector
from sink.contracts.secret import SecretValue
from sink.contracts.transport import (
    CredentialResolverPort,
    CredentialUnavailable,
    PreparedRequest,
    RestTransportPort,
)
from sink.transport.body import BytesBody

_B64TOKEN = re.compile(r"^[A-Za-z0-9\-._~+/]+=*\Z")
TOKEN_POINTERS = ("/access_token", "/token_type", "/expires_in")
MAX_REFRESH_SKEW_S = 60.0


class ClientSecretBasic:
    """The token request's own auth provider: the client id and secret as Basic credentials."""

    def __init__(self, resolver: CredentialResolverPort, client_id: str, secret_ref: str) -> None:
        self._resolver = resolver
        self._client_id = client_id
        self._ref = secret_ref

    def credential_headers(self) -> tuple[tuple[str, SecretValue], ...]:
        secret = self._resolver.resolve(self._ref)
        pair = f"{quote(self._client_id, safe='')}:{quote(secret.reveal(), safe='')}"
        return (("authorization", SecretValue("Basic " + base64.b64encode(pair.encode("ascii")).decode("ascii"))),)

    def __repr__(self) -> str:
        return "ClientSecretBasic(***)"


def refresh_skew_s(lifetime_s: float) -> float:
    """How long before expiry a token is replaced: a quarter of its life, at most a minute, so a
    request never starts with a token about to expire in flight."""
    return min(MAX_REFRESH_SKEW_S, lifetime_s / 4.0)


class OAuthClientCredentials:
    """``auth_provider: oauth2_client_credentials``; thread safe (one fetch at a time)."""

    def __init__(
        self, *, token_transport: RestTransportPort, token_path: str, scope: str | None, timeouts: TimeoutVector,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``token_transport`` is bound to the token endpoint's origin and authenticates as the client."""
        self._transport = token_transport
        self._path = token_path
        form = {"grant_type": "client_credentials", **({"scope": scope} if scope else {})}
        self._form = urlencode(form).encode("ascii")
        self._timeouts = timeouts
        self._clock = clock
        self._lock = threading.Lock()
        self._token: SecretValue | None = None
        self._refresh_at = 0.0
        self.tokens_fetched = 0
        """How many tokens this process obtained (evidence for tests and operators; not the token)."""

    def credential_headers(self) -> tuple[tuple[str, SecretValue], ...]:
        with self._lock:
            if self._token is None or self._clock() >= self._refresh_at:
                self._token = None
                self._fetch()
            token = self._token
        if token is None:  # pragma: no cover - _fetch either sets a token or raises
            raise CredentialUnavailable("oauth_token_unavailable")
        return (("authorization", SecretValue("Bearer " + token.reveal())),)

    def _fetch(self) -> None:
        request = PreparedRequest(
            method="POST", path_and_query=self._path, semantic_headers=(("accept", "application/json"),),
            content_type="application/x-www-form-urlencoded", body=BytesBody(self._form),
            extract_pointers=TOKEN_POINTERS,
        )
        started = self._clock()
        outcome = self._transport.send(request, timeouts=self._timeouts)
        response = outcome.response
        if response is None:
            raise CredentialUnavailable("oauth_token_endpoint_unreachable")
        if response.status != 200:
            # 3xx included: a redirect of the token request is never followed.
            raise CredentialUnavailable("oauth_token_refused")
        scalars = response.scalars
        access, kind, lifetime = (scalars.get(pointer) for pointer in TOKEN_POINTERS)
        del scalars, response, outcome  # drop the only other reference to the token's text
        if not isinstance(access, str) or not _B64TOKEN.fullmatch(access):
            raise CredentialUnavailable("oauth_token_malformed")
        if not isinstance(kind, str) or kind.lower() != "bearer":
            raise CredentialUnavailable("oauth_token_type_unsupported")
        token = SecretValue(access)
        del access
        if isinstance(lifetime, bool) or not isinstance(lifetime, int) or lifetime <= 0:
            # No (or a nonsensical) lifetime: use the token for this request only.
            self._refresh_at = started
        else:
            self._refresh_at = started + lifetime - refresh_skew_s(float(lifetime))
        self._token = token
        self.tokens_fetched += 1

    def close(self) -> None:
        self._transport.close()

    def __repr__(self) -> str:
        return "OAuthClientCredentials(***)"


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    """The binding's OAuth fields plus how to open the token request's transport (the security
    layer builds it: same TLS policy and address allowlist as the binding, the client's Basic
    credentials as its only auth)."""

    open_token_transport: Callable[[ClientSecretBasic], RestTransportPort]
    token_path: str
    client_id: str
    scope: str | None
    timeouts: TimeoutVector
    clock: Callable[[], float] = time.monotonic

    def provider(self, resolver: CredentialResolverPort, secret_ref: str) -> OAuthClientCredentials:
        client = ClientSecretBasic(resolver, self.client_id, secret_ref)
        return OAuthClientCredentials(
            token_transport=self.open_token_transport(client), token_path=self.token_path,
            scope=self.scope, timeouts=self.timeouts, clock=self.clock,
        )
