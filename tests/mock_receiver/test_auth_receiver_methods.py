"""The behaviour's ``auth:`` section: bearer, API key header and Basic, on every data endpoint (in process)."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mr_auth_support import BATCHES, ROWS, SUMMARY
from mr_support import ADMIN_HEADERS, behaviour_with, client_for, job_files, rows_for

from mock_receiver.app import open_receiver
from mock_receiver.behaviour import BehaviourError, parse_behaviour
from mock_receiver.secret_sources import AuthConfigError

TOKEN = "sentinel-bearer-7f3a"
API_KEY = "sentinel-apikey-91c2"
PASSWORD = "sentinel-password-4d8e"

BEARER = {"method": "bearer", "token_env": "MR_TEST_TOKEN"}
API_KEY_AUTH = {"method": "api_key_header", "header": "X-Ingest-Key", "key_env": "MR_TEST_KEY"}
BASIC = {"method": "basic", "username": "loader", "password_env": "MR_TEST_PASSWORD"}


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MR_TEST_TOKEN", TOKEN)
    monkeypatch.setenv("MR_TEST_KEY", API_KEY)
    monkeypatch.setenv("MR_TEST_PASSWORD", PASSWORD)


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Any]:
    opened: list[Any] = []

    def make(auth: dict[str, Any], base: str = "dataset-jobs") -> Any:
        context = client_for(behaviour_with(base, auth=auth), tmp_path / f"state{len(opened)}")
        opened.append(context)
        return context.__enter__()

    yield make
    for context in opened:
        context.__exit__(None, None, None)


def _refusal(response: Any, status: int, slug: str, scheme: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"] == f"urn:restproof:mock-receiver:problem:{slug}"
    assert response.headers["www-authenticate"].startswith(scheme)


GOOD = {
    "bearer": (BEARER, {"Authorization": f"Bearer {TOKEN}"}),
    "api_key_header": (API_KEY_AUTH, {"X-Ingest-Key": API_KEY}),
    "basic": (BASIC, {"Authorization": _basic("loader", PASSWORD)}),
}
WRONG = {
    "bearer": [{"Authorization": f"Bearer {TOKEN}x"}, {"Authorization": f"Bearer {TOKEN[:-1]}"}],
    "api_key_header": [{"X-Ingest-Key": API_KEY + "x"}, {"X-Ingest-Key": ""}],
    "basic": [{"Authorization": _basic("loader", PASSWORD + "x")}, {"Authorization": _basic("other", PASSWORD)},
              {"Authorization": "Basic !!!notbase64"},
              {"Authorization": "Basic " + base64.b64encode(b"loader").decode()}],  # no colon
}
MISSING = {
    "bearer": [{}, {"Authorization": _basic("loader", TOKEN)}, {"X-Ingest-Key": TOKEN}],
    "api_key_header": [{}, {"Authorization": f"Bearer {API_KEY}"}, {"X-Api-Key": API_KEY}],
    "basic": [{}, {"Authorization": f"Bearer {PASSWORD}"}],
}
SCHEME = {"bearer": "Bearer", "api_key_header": "ApiKey", "basic": "Basic"}


@pytest.mark.parametrize("method", sorted(GOOD))
def test_the_right_credential_is_accepted_on_every_data_endpoint(make_client: Any, method: str) -> None:
    auth, headers = GOOD[method]
    client = make_client(auth)
    assert client.get(SUMMARY, headers=headers).status_code == 200
    assert client.post(BATCHES, json=ROWS, headers=headers).status_code == 200
    files, data = job_files("k1", rows_for(["2026-03-01"]), "2026-03-01", "2026-03-02")
    job = client.post("/mock/v1/dataset-jobs", files=files, data=data, headers=headers)
    assert job.status_code == 202, job.text
    assert client.get(f"/mock/v1/dataset-jobs/{job.json()['job_id']}", headers=headers).status_code == 200
    assert client.get("/_admin/auth").json()["requests_accepted"] == 4


@pytest.mark.parametrize("method", sorted(GOOD))
def test_a_wrong_credential_is_401_invalid_credentials_and_changes_nothing(make_client: Any, method: str) -> None:
    auth, _ = GOOD[method]
    client = make_client(auth)
    for headers in WRONG[method]:
        _refusal(client.post(BATCHES, json=ROWS, headers=headers), 401, "invalid_credentials", SCHEME[method])
        _refusal(client.get(SUMMARY, headers=headers), 401, "invalid_credentials", SCHEME[method])
    # Refused before any handler: nothing in the ledger, the refusals in the counters.
    assert client.get("/_admin/requests").json()["items"] == []
    assert client.get("/_admin/effects").json()["items"] == []
    status = client.get("/_admin/auth").json()
    assert status["requests_refused"] == {"invalid_credentials": 2 * len(WRONG[method])}
    assert status["requests_accepted"] == 0


@pytest.mark.parametrize("method", sorted(GOOD))
def test_a_missing_credential_is_401_authentication_required(make_client: Any, method: str) -> None:
    auth, _ = GOOD[method]
    client = make_client(auth)
    for headers in MISSING[method]:
        _refusal(client.post(BATCHES, json=ROWS, headers=headers), 401, "authentication_required", SCHEME[method])
    files, data = job_files("k1", rows_for(["2026-03-01"]), "2026-03-01", "2026-03-02")
    _refusal(client.post("/mock/v1/dataset-jobs", files=files, data=data), 401, "authentication_required",
             SCHEME[method])
    _refusal(client.get("/mock/v1/dataset-jobs/job_x"), 401, "authentication_required", SCHEME[method])
    # Even a path that does not exist: no route is disclosed to an unauthenticated caller.
    _refusal(client.get("/mock/v1/nothing-here"), 401, "authentication_required", SCHEME[method])
    assert client.get("/_admin/requests").json()["items"] == []


def test_two_authorization_headers_are_refused(make_client: Any) -> None:
    client = make_client(BEARER)
    headers = [("Authorization", f"Bearer {TOKEN}"), ("Authorization", f"Bearer {TOKEN}")]
    _refusal(client.get(SUMMARY, headers=headers), 401, "invalid_credentials", "Bearer")
    two_keys = [("X-Ingest-Key", API_KEY), ("X-Ingest-Key", API_KEY)]
    _refusal(make_client(API_KEY_AUTH).get(SUMMARY, headers=two_keys), 401, "invalid_credentials", "ApiKey")


def test_the_api_key_header_name_is_the_configured_one_case_insensitively(make_client: Any) -> None:
    client = make_client(API_KEY_AUTH)
    assert client.get(SUMMARY, headers={"x-ingest-key": API_KEY}).status_code == 200
    _refusal(client.get(SUMMARY, headers={"X-API-Key": API_KEY}), 401, "authentication_required", "ApiKey")
    assert 'header="X-Ingest-Key"' in client.get(SUMMARY).headers["www-authenticate"]


def test_no_auth_section_keeps_the_open_receiver(make_client: Any) -> None:
    client = make_client({"method": "none"})
    assert client.get(SUMMARY).status_code == 200
    assert client.get("/_admin/auth").json()["method"] == "none"


@pytest.mark.parametrize("method", sorted(GOOD))
def test_the_admin_api_needs_no_data_credential(make_client: Any, method: str) -> None:
    client = make_client(GOOD[method][0])
    assert client.get("/_admin/health").status_code == 200
    assert client.post("/_admin/reset").status_code == 200
    assert client.get("/_admin/stats").status_code == 200


def test_a_behaviour_never_holds_a_secret_value() -> None:
    base = behaviour_with("dataset-jobs").model_dump(mode="json")
    for auth in ({"method": "bearer", "token": TOKEN}, {"method": "bearer"},
                 {"method": "bearer", "token_env": "A", "token_file": "/x"},
                 {"method": "basic", "username": "u", "password": PASSWORD},
                 {"method": "api_key_header", "key_env": "K", "header": "Authorization"},
                 {"method": "basic", "username": "a:b", "password_env": "P"},
                 {"method": "oauth2_client_credentials", "client_id": "c", "client_secret": "s"},
                 {"method": "mtls"}, {"method": "hmac"}):
        with pytest.raises(BehaviourError) as raised:
            parse_behaviour({**base, "auth": auth})
        assert TOKEN not in str(raised.value) and PASSWORD not in str(raised.value)


def test_an_unreadable_secret_is_a_clear_error_naming_only_its_source(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MR_TEST_TOKEN")
    with pytest.raises(AuthConfigError, match="MR_TEST_TOKEN is not set"):
        open_receiver(behaviour_with("dataset-jobs", auth=BEARER), tmp_path / "s1")
    monkeypatch.setenv("MR_TEST_TOKEN", "")
    with pytest.raises(AuthConfigError, match="MR_TEST_TOKEN is empty"):
        open_receiver(behaviour_with("dataset-jobs", auth=BEARER), tmp_path / "s2")


def test_a_secret_file_loses_one_trailing_newline_only(make_client: Any, tmp_path: Path) -> None:
    secret_file = tmp_path / "token"
    secret_file.write_text(TOKEN + "\r\n", encoding="utf-8")
    client = make_client({"method": "bearer", "token_file": str(secret_file)})
    assert client.get(SUMMARY, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    secret_file.write_text(TOKEN + "\n\n", encoding="utf-8")
    client = make_client({"method": "bearer", "token_file": str(secret_file)})
    assert client.get(SUMMARY, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 401


@pytest.mark.parametrize("kind", ["missing", "empty", "directory", "fifo", "symlink"])
def test_a_bad_secret_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "secret"
    if kind == "empty":
        path.write_text("\n", encoding="utf-8")
    elif kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        (tmp_path / "real").write_text(TOKEN, encoding="utf-8")
        path.symlink_to(tmp_path / "real")
    with pytest.raises(AuthConfigError) as raised:
        open_receiver(behaviour_with("dataset-jobs", auth={"method": "bearer", "token_file": str(path)}),
                      tmp_path / "state")
    assert str(path) in str(raised.value) and TOKEN not in str(raised.value)


def test_switching_the_behaviour_switches_the_credential_and_a_bad_one_changes_nothing(
        make_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    client = make_client(BEARER)
    document = behaviour_with("dataset-jobs", auth=API_KEY_AUTH).model_dump(mode="json")
    monkeypatch.delenv("MR_TEST_KEY")
    refused = client.put("/_admin/behaviour", json=document, headers=ADMIN_HEADERS)
    assert refused.status_code == 422 and "MR_TEST_KEY" in refused.json()["detail"]
    assert client.get(SUMMARY, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    monkeypatch.setenv("MR_TEST_KEY", API_KEY)
    assert client.put("/_admin/behaviour", json=document, headers=ADMIN_HEADERS).status_code == 200
    assert client.get(SUMMARY, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 401
    assert client.get(SUMMARY, headers={"X-Ingest-Key": API_KEY}).status_code == 200
    assert client.get("/_admin/behaviour").json()["auth"] == {**API_KEY_AUTH, "key_file": None}


def test_requests_carrying_an_authorization_header_are_counted_for_every_method(make_client: Any) -> None:
    open_client = make_client({"method": "none"})
    open_client.get(SUMMARY)
    open_client.get(SUMMARY, headers={"Authorization": "Bearer leaked"})
    open_client.get("/_admin/health", headers={"Authorization": "Bearer not-data"})  # admin: not counted
    assert open_client.get("/_admin/auth").json()["requests_with_authorization_header"] == 1
    key_client = make_client(API_KEY_AUTH)
    key_client.get(SUMMARY, headers={"X-Ingest-Key": API_KEY})
    key_client.get(SUMMARY, headers={"X-Ingest-Key": API_KEY, "Authorization": "Basic eDp5"})
    status = key_client.get("/_admin/auth").json()
    assert status["requests_with_authorization_header"] == 1 and status["requests_accepted"] == 2
    key_client.post("/_admin/reset", headers=ADMIN_HEADERS)
    assert key_client.get("/_admin/auth").json()["requests_with_authorization_header"] == 0
