"""OAuth 2.0 client credentials: one token per lifetime, refreshed before it expires, never in
evidence, a repr or a log line; a refused or malformed token response is a stable reason."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from sec_server import Gateway, Pki, TlsListener, fixed
from sec_support import SENTINELS, TIMEOUTS, binding, policies, post

from sink.contracts.transport import CredentialUnavailable, FailureKind
from sink.security.wire import BindingTransport, open_binding_transport
from sink.transport import default_registry
from sink.transport.oauth import OAuthClientCredentials, refresh_skew_s

pytestmark = pytest.mark.timeout(120)
ENVIRON = {"SECRET": SENTINELS["client_secret"]}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def listeners() -> Iterator[list[TlsListener]]:
    opened: list[TlsListener] = []
    yield opened
    for listener in opened:
        listener.close()


def _wire(listener: TlsListener, pki: Pki, tmp_path: Path, clock: Clock, scope: str | None = None) -> BindingTransport:
    bound = binding(listener.url, "oauth2_client_credentials", credential_ref="env://SECRET",
                    oauth_client_id="client-1", oauth_token_endpoint=f"{listener.url}/oauth/token", oauth_scope=scope)
    return open_binding_transport(bound, timeouts=TIMEOUTS, policies=policies(tmp_path, pki),
                                  resolver=default_registry(ENVIRON), clock=clock)


def test_refresh_skew() -> None:
    assert refresh_skew_s(3600) == 60.0 and refresh_skew_s(8) == 2.0


def test_token_cached_for_its_life_and_refreshed_before_expiry(pki: Pki, tmp_path: Path,
                                                               listeners: list[TlsListener],
                                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    gateway = Gateway("oauth2_client_credentials", f"client-1:{SENTINELS['client_secret']}", token_lifetime_s=8)
    listener = TlsListener(pki, gateway)
    listeners.append(listener)
    clock = Clock()
    wire = _wire(listener, pki, tmp_path, clock, scope="ingest.write")
    assert isinstance(wire.auth, OAuthClientCredentials)
    try:
        outcomes = [wire.transport.send(post(), timeouts=TIMEOUTS)]
        clock.now += 5.9  # 8 s life, refreshed 2 s before expiry: still the first token
        outcomes.append(wire.transport.send(post(), timeouts=TIMEOUTS))
        assert wire.auth.tokens_fetched == 1
        clock.now += 0.2  # 6.1 s: inside the refresh window
        outcomes.append(wire.transport.send(post(), timeouts=TIMEOUTS))
    finally:
        wire.close()
    assert wire.auth.tokens_fetched == 2 and len(gateway.issued) == 2
    assert all(o.response is not None and o.response.status == 200 for o in outcomes)
    paths = [s.path for s in listener.seen]
    assert paths == ["/oauth/token", "/mock/v1/items", "/mock/v1/items", "/oauth/token", "/mock/v1/items"]
    used = [s.headers["authorization"] for s in listener.seen if s.path != "/oauth/token"]
    assert used == [f"Bearer {gateway.issued[0]}"] * 2 + [f"Bearer {gateway.issued[1]}"]
    token_request = listener.seen[0]
    assert token_request.body == b"grant_type=client_credentials&scope=ingest.write"
    assert token_request.headers["content-type"] == "application/x-www-form-urlencoded"
    # The mutation requests carried the same idempotency key whatever the token: a refresh changes
    # no identity the sink derives.
    assert {s.headers["idempotency-key"] for s in listener.seen if s.path != "/oauth/token"} == {"k-1"}
    text = caplog.text + repr(outcomes) + repr(wire.auth)
    for secret in (*gateway.issued, SENTINELS["client_secret"]):
        assert secret not in text


@pytest.mark.parametrize(("reply", "reason"), [
    (fixed(401, {"error": "invalid_client"}), "oauth_token_refused"),
    (fixed(200, {"access_token": "a b", "token_type": "Bearer", "expires_in": 60}), "oauth_token_malformed"),
    (fixed(200, {"access_token": "abc", "token_type": "mac", "expires_in": 60}), "oauth_token_type_unsupported"),
    (fixed(200, {"token_type": "Bearer"}), "oauth_token_malformed"),
])
def test_a_bad_token_response_is_a_stable_reason_and_no_mutation(reply: object, reason: str, pki: Pki,
                                                                  tmp_path: Path,
                                                                  listeners: list[TlsListener]) -> None:
    listener = TlsListener(pki, reply)  # type: ignore[arg-type]
    listeners.append(listener)
    wire = _wire(listener, pki, tmp_path, Clock())
    try:
        with pytest.raises(CredentialUnavailable) as raised:
            wire.auth.credential_headers()
        assert raised.value.reason == reason
        outcome = wire.transport.send(post(), timeouts=TIMEOUTS)
    finally:
        wire.close()
    assert outcome.evidence.failure is FailureKind.CREDENTIAL_UNAVAILABLE
    assert {s.path for s in listener.seen} == {"/oauth/token"}


def test_a_token_without_a_lifetime_is_used_once(pki: Pki, tmp_path: Path, listeners: list[TlsListener]) -> None:
    listener = TlsListener(pki, fixed(200, {"access_token": "abc", "token_type": "bearer"}))
    listeners.append(listener)
    wire = _wire(listener, pki, tmp_path, Clock())
    try:
        wire.auth.credential_headers()
        wire.auth.credential_headers()
    finally:
        wire.close()
    assert isinstance(wire.auth, OAuthClientCredentials) and wire.auth.tokens_fetched == 2
