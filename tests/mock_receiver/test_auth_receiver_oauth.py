"""OAuth 2.0 client credentials: the token endpoint, token use, expiry and forced expiry (in process)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest
from mr_auth_support import SUMMARY
from mr_support import ADMIN_HEADERS, behaviour_with, client_for

from mock_receiver.oauth_tokens import MAX_LIVE_TOKENS, TokenStore

SECRET = "sentinel-client-secret-e61f &+:="  # characters that must be form-urlencoded inside Basic
OAUTH = {"method": "oauth2_client_credentials", "client_id": "sink:client", "client_secret_env": "MR_OAUTH_SECRET",
         "token_ttl_seconds": 120}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("MR_OAUTH_SECRET", SECRET)
    with client_for(behaviour_with("dataset-jobs", auth=OAUTH), tmp_path / "state") as test_client:
        yield test_client


def _basic(client_id: str, secret: str) -> dict[str, str]:
    pair = f"{quote_plus(client_id)}:{quote_plus(secret)}".encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode(), **FORM}


def _token(client: Any, body: str | bytes = "grant_type=client_credentials",
           headers: dict[str, str] | None = None) -> Any:
    return client.post("/oauth/token", content=body, headers=headers or _basic("sink:client", SECRET))


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _oauth_error(response: Any, status: int, error: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    assert response.json()["error"] == error


def test_a_token_from_basic_client_auth_opens_the_data_api(client: Any) -> None:
    answer = _token(client)
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    body = answer.json()
    assert set(body) == {"access_token", "token_type", "expires_in"}
    assert body["token_type"] == "Bearer" and body["expires_in"] == 120
    assert len(body["access_token"]) >= 40
    assert client.get(SUMMARY, headers=_bearer(body["access_token"])).status_code == 200
    status = client.get("/_admin/auth").json()
    assert status["tokens_issued"] == 1 and status["tokens_active"] == 1 and status["requests_accepted"] == 1


def test_form_client_auth_works_and_every_token_is_new(client: Any) -> None:
    body = "grant_type=client_credentials&client_id=sink%3Aclient&client_secret=" + quote_plus(SECRET)
    first = _token(client, body, FORM).json()["access_token"]
    second = _token(client, body, FORM).json()["access_token"]
    assert first != second
    assert client.get(SUMMARY, headers=_bearer(first)).status_code == 200
    assert client.get(SUMMARY, headers=_bearer(second)).status_code == 200


@pytest.mark.parametrize("headers", [
    _basic("sink:client", SECRET + "x"), _basic("other", SECRET), _basic("sink:client", ""),
    {"Authorization": "Basic %%%", **FORM}, {"Authorization": "Bearer abc", **FORM},
    {"Authorization": "Basic " + base64.b64encode(b"no-colon").decode(), **FORM}, FORM])
def test_a_bad_client_is_invalid_client_401(client: Any, headers: dict[str, str]) -> None:
    answer = _token(client, headers=headers)
    _oauth_error(answer, 401, "invalid_client")
    assert answer.headers["www-authenticate"].startswith("Basic")
    assert "access_token" not in answer.text
    assert client.get("/_admin/auth").json()["token_requests_refused"] == {"invalid_client": 1}


def test_a_wrong_form_secret_is_invalid_client(client: Any) -> None:
    body = "grant_type=client_credentials&client_id=sink%3Aclient&client_secret=nope"
    _oauth_error(_token(client, body, FORM), 401, "invalid_client")


@pytest.mark.parametrize(("body", "status", "error"), [
    ("grant_type=password&username=a&password=b", 400, "unsupported_grant_type"),
    ("grant_type=authorization_code&code=x", 400, "unsupported_grant_type"),
    ("scope=ingest", 400, "invalid_request"),
    ("grant_type=client_credentials&grant_type=client_credentials", 400, "invalid_request"),
    ("grant_type=client_credentials&client_secret=x", 400, "invalid_request"),  # two client auth methods
    ("\xff\xfe", 400, "invalid_request"),
])
def test_grant_errors_are_rfc6749_json(client: Any, body: str, status: int, error: str) -> None:
    _oauth_error(_token(client, body.encode("latin-1") if body.startswith("\xff") else body), status, error)
    assert client.get("/_admin/auth").json()["tokens_issued"] == 0


def test_the_token_endpoint_wants_a_form_and_a_bounded_body(client: Any) -> None:
    json_headers = {**_basic("sink:client", SECRET), "Content-Type": "application/json"}
    _oauth_error(client.post("/oauth/token", json={"grant_type": "client_credentials"}, headers=json_headers), 400,
                 "invalid_request")
    big = "grant_type=client_credentials&pad=" + "x" * 9000
    assert _token(client, big).status_code == 413


def test_an_expired_or_unknown_token_is_401_and_a_new_one_works(client: Any) -> None:
    token = _token(client).json()["access_token"]
    expired = client.post("/_admin/auth/expire-tokens", headers=ADMIN_HEADERS)
    assert expired.json() == {"expired": 1, "tokens_issued": 1}
    answer = client.get(SUMMARY, headers=_bearer(token))
    assert answer.status_code == 401
    assert answer.json()["type"].endswith(":token_expired")
    assert answer.headers["www-authenticate"] == 'Bearer realm="mock-receiver", error="invalid_token"'
    assert client.get("/_admin/auth").json()["tokens_active"] == 0
    unknown = client.get(SUMMARY, headers=_bearer(token[:-2] + "zz"))
    assert unknown.status_code == 401 and unknown.json()["type"].endswith(":invalid_credentials")
    missing = client.get(SUMMARY)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == 'Bearer realm="mock-receiver"'
    fresh = _token(client).json()["access_token"]
    assert client.get(SUMMARY, headers=_bearer(fresh)).status_code == 200
    assert client.post("/_admin/auth/expire-tokens", headers=ADMIN_HEADERS).json()["expired"] == 1


def test_forcing_expiry_needs_the_admin_header(client: Any) -> None:
    token = _token(client).json()["access_token"]
    refused = client.post("/_admin/auth/expire-tokens", headers={"X-Restproof-Admin": "0"})
    assert refused.status_code == 403
    assert client.get(SUMMARY, headers=_bearer(token)).status_code == 200


def test_tokens_expire_on_their_own_after_the_ttl() -> None:
    now = [1000.0]
    store = TokenStore(clock=lambda: now[0])
    token = store.issue(60, frozenset())
    now[0] = 1059.9
    assert store.lookup(token)[1] is True
    now[0] = 1060.0
    issued, valid = store.lookup(token)
    assert issued is not None and valid is False
    assert store.active() == 0 and store.issued == 1
    assert store.lookup("never-issued") == (None, False)


def test_the_token_store_is_bounded() -> None:
    now = [0.0]
    store = TokenStore(clock=lambda: now[0])
    first = store.issue(1, frozenset())
    now[0] = 5.0  # the first is expired: making room drops it, not a live one
    tokens = [store.issue(100, frozenset()) for _ in range(MAX_LIVE_TOKENS)]
    assert store.lookup(first) == (None, False)
    assert store.lookup(tokens[0])[1] is True
    store.issue(100, frozenset())  # all live: the oldest goes
    assert store.lookup(tokens[0]) == (None, False)
    assert store.lookup(tokens[1])[1] is True


def test_scopes_are_granted_only_from_the_allowed_set_and_required_scope_is_403(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MR_OAUTH_SECRET", SECRET)
    auth = {**OAUTH, "scopes": ["ingest", "read"], "required_scope": "ingest"}
    with client_for(behaviour_with("dataset-jobs", auth=auth), tmp_path / "state") as client:
        _oauth_error(_token(client, "grant_type=client_credentials&scope=admin"), 400, "invalid_scope")
        read_only = _token(client, "grant_type=client_credentials&scope=read").json()
        assert read_only["scope"] == "read"
        answer = client.get(SUMMARY, headers=_bearer(read_only["access_token"]))
        assert answer.status_code == 403 and answer.json()["type"].endswith(":insufficient_scope")
        assert 'error="insufficient_scope"' in answer.headers["www-authenticate"]
        both = _token(client, "grant_type=client_credentials&scope=read+ingest").json()
        assert both["scope"] == "ingest read"
        assert client.get(SUMMARY, headers=_bearer(both["access_token"])).status_code == 200
        default = _token(client).json()  # no scope asked: all allowed scopes
        assert default["scope"] == "ingest read"


def test_tokens_survive_a_switch_that_keeps_the_client_and_die_with_another(client: Any) -> None:
    token = _token(client).json()["access_token"]
    same = behaviour_with("dataset-jobs", auth={**OAUTH, "token_ttl_seconds": 30}).model_dump(mode="json")
    assert client.put("/_admin/behaviour", json=same, headers=ADMIN_HEADERS).status_code == 200
    assert client.get(SUMMARY, headers=_bearer(token)).status_code == 200
    other = behaviour_with("dataset-jobs", auth={**OAUTH, "client_id": "another"}).model_dump(mode="json")
    assert client.put("/_admin/behaviour", json=other, headers=ADMIN_HEADERS).status_code == 200
    assert client.get(SUMMARY, headers=_bearer(token)).status_code == 401


def test_the_token_endpoint_is_404_unless_oauth_is_the_method(tmp_path: Path) -> None:
    with client_for(behaviour_with("dataset-jobs"), tmp_path / "state") as client:
        answer = client.post("/oauth/token", content="grant_type=client_credentials", headers=FORM)
        assert answer.status_code == 404 and answer.headers["content-type"] == "application/problem+json"


def test_reset_clears_the_counters_but_not_the_tokens(client: Any) -> None:
    token = _token(client).json()["access_token"]
    client.get(SUMMARY)
    assert client.post("/_admin/reset", headers=ADMIN_HEADERS).status_code == 200
    status = client.get("/_admin/auth").json()
    assert status["requests_refused"] == {} and status["requests_accepted"] == 0
    assert client.get(SUMMARY, headers=_bearer(token)).status_code == 200
