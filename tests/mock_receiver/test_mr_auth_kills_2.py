"""The auth middleware's own rules: which paths and scopes pass unchecked (the admin prefix and the
token endpoint, exactly), and how much of a refused request's body it reads before answering (all of a
body up to max_body_bytes, then it stops; never past the end, never after a disconnect). Then the
same through a receiver: the token endpoint's refusals are counted where /_admin/auth shows them."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from mr_auth_gate_support import ask
from mr_support import ADMIN_HEADERS, behaviour_with, client_for

from mock_receiver.auth import AuthGate
from mock_receiver.auth_spec import BearerAuth

BEARER = BearerAuth(method="bearer", token_env="MR_KILL2_TOKEN")
TOKEN = "kill2-token"


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MR_KILL2_TOKEN", TOKEN)


def test_only_the_admin_prefix_and_the_token_endpoint_pass_without_a_credential() -> None:
    gate = AuthGate(BEARER)
    for path in ("/_admin", "/_admin/health", "/_admin/auth/expire-tokens", "/oauth/token"):
        assert ask(gate, path=path).reached, path
    for path in ("/_adminx", "/_admin_/health", "/x/_admin/health", "/oauth/token/x", "/oauth", "/oauth/tokens", "/"):
        answer = ask(gate, path=path)
        assert (answer.reached, answer.status) == (False, 401), path
    assert gate.counters.accepted == 0  # the exempt requests were never the gate's to count


def test_a_non_http_scope_passes_through_untouched() -> None:
    assert ask(AuthGate(BEARER), scope_type="lifespan").reached


def test_a_request_scope_without_extensions_is_checked_like_any_other() -> None:
    gate = AuthGate(BEARER)
    assert ask(gate, [("Authorization", f"Bearer {TOKEN}")]).reached
    assert ask(gate, [("Authorization", f"Bearer {TOKEN}")], extensions={"http.response.debug": {}}).reached
    assert ask(gate).status == 401


def _chunks(count: int, size: int, *, final_empty: bool = False) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [
        {"type": "http.request", "body": b"x" * size, "more_body": final_empty or number < count - 1}
        for number in range(count)]
    if final_empty:
        messages.append({"type": "http.request", "body": b"", "more_body": False})
    return messages


def test_a_refused_body_of_exactly_the_limit_is_read_to_its_end() -> None:
    answer = ask(AuthGate(BEARER), body=_chunks(4, 1000, final_empty=True), max_body_bytes=4000)
    assert (answer.status, answer.body_messages_read) == (401, 5)


def test_a_refused_body_over_the_limit_is_read_only_just_past_it() -> None:
    answer = ask(AuthGate(BEARER), body=_chunks(100, 1000), max_body_bytes=4000)
    assert (answer.status, answer.body_messages_read) == (401, 5)  # 5000 bytes: the first read past 4000
    answer = ask(AuthGate(BEARER), body=_chunks(100, 1000), max_body_bytes=4001)
    assert (answer.status, answer.body_messages_read) == (401, 5)


def test_a_last_body_message_without_more_body_ends_the_drain() -> None:
    """ASGI: more_body defaults to False; reading on would wait for a message that never comes."""
    answer = ask(AuthGate(BEARER), body=[{"type": "http.request", "body": b"abc"}])
    assert (answer.status, answer.body_messages_read) == (401, 1)


def test_a_disconnect_ends_the_drain_and_the_refusal_is_still_answered() -> None:
    body: list[dict[str, object]] = [*_chunks(3, 10, final_empty=True)[:2], {"type": "http.disconnect"}]
    answer = ask(AuthGate(BEARER), body=body)
    assert (answer.status, answer.body_messages_read) == (401, 3)


def test_token_endpoint_refusals_are_counted_by_error_and_reset_clears_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MR_KILL2_SECRET", "kill2-secret")
    oauth = {"method": "oauth2_client_credentials", "client_id": "sink", "client_secret_env": "MR_KILL2_SECRET"}
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    wrong = {"Authorization": "Basic " + base64.b64encode(b"sink:wrong").decode(), **form}
    with client_for(behaviour_with("dataset-jobs", auth=oauth), tmp_path / "state") as client:
        for _ in range(2):
            refused = client.post("/oauth/token", content="grant_type=client_credentials", headers=wrong)
            assert refused.status_code == 401
        status = client.get("/_admin/auth").json()
        assert status["token_requests_refused"] == {"invalid_client": 2}
        assert (status["requests_accepted"], status["requests_refused"]) == (0, {})
        assert client.post("/_admin/reset", headers=ADMIN_HEADERS).status_code == 200
        assert client.get("/_admin/auth").json()["token_requests_refused"] == {}
