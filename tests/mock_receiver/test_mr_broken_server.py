"""Valid configuration, broken server: every number a behaviour can make the ledger store is bounded
when the behaviour is validated; a request whose ledger work fails is still logged and frees what it
reserved; a behaviour switch during an upload never mixes two behaviours; a large behaviour document
is bounded and parsed off the event loop. All through a real `mock-receiver serve`."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mr_support import ADMIN_HEADERS, MOCK_RECEIVER_BIN, RECEIVERS, ServerProcess, admin_items, csv_gz, rows_for
from mr_wire import authority, exchange, request_bytes

from mock_receiver.documents import MAX_BYTES

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

RANGE = {"range_start": "2026-07-01", "range_end": "2026-07-02"}
BATCHES = "/mock/v1/resources/measurements/batches"
BASE = {"name": "bounded", "resources": {"measurements": {"mutation": "partition_replace",
                                                           "date_field": "business_date"}}}
INT64_MAX = 2**63 - 1


def _rule(action: dict[str, Any], when: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": "r", "match": {"endpoints": ["sync_submit"]}, "when": when or {"always": True},
            "action": action}


UNBOUNDED = {
    "accepted_delta_int64_max": {"rules": [_rule({"kind": "miscount", "accepted_delta": INT64_MAX})]},
    "accepted_delta_int64_min": {"rules": [_rule({"kind": "miscount", "accepted_delta": -(2**63)})]},
    "rejected_delta_beyond": {"rules": [_rule({"kind": "miscount", "rejected_delta": 10**9 + 1})]},
    "nth_beyond": {"rules": [_rule({"kind": "delay", "seconds": 1}, {"nth": [2**63]})]},
    "every_beyond": {"rules": [_rule({"kind": "delay", "seconds": 1}, {"every": 2**64})]},
    "max_fires_beyond": {"rules": [_rule({"kind": "delay", "seconds": 1}, {"always": True, "max_fires": 2**63})]},
    "seed_beyond": {"rules": [_rule({"kind": "delay", "seconds": 1}, {"probability": 0.5, "seed": 2**64})]},
    "every_nth_row_beyond": {"rules": [_rule({"kind": "reject_rows", "every_nth_row": 2**63})]},
    "retention_1e300": {"sync": {"fence": {"type": "idempotency_key", "retention_seconds": 1e300}}},
    "async_retention_1e300": {"async_jobs": {"resource": "measurements",
                                             "fence": {"type": "filename_key", "retention_seconds": 1e300}}},
    "complete_after_1e300": {"async_jobs": {"resource": "measurements", "complete_after_seconds": 1e300}},
    "receipt_ttl_1e300": {"async_jobs": {"resource": "measurements", "receipt_ttl_seconds": 1e300}},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path_factory.mktemp("broken")).start()
    yield process
    stderr = process.stop()
    assert "Traceback" not in stderr, stderr[-3000:]


def _admin(server: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=server.admin_url, headers=ADMIN_HEADERS, timeout=30)


@pytest.mark.parametrize("name", sorted(UNBOUNDED))
def test_unbounded_numbers_fail_validate_with_exit_2(tmp_path: Path, name: str) -> None:
    path = tmp_path / "behaviour.yaml"
    path.write_text(json.dumps({**BASE, **UNBOUNDED[name]}))
    result = subprocess.run([str(MOCK_RECEIVER_BIN), "validate", str(path)], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2, result.stdout
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_unbounded_numbers_are_refused_by_put_and_change_nothing(server: ServerProcess) -> None:
    with _admin(server) as admin:
        for name, changes in UNBOUNDED.items():
            response = admin.put("/_admin/behaviour", json={**BASE, **changes})
            assert response.status_code == 422, (name, response.text)
            assert response.json()["type"].endswith("invalid_behaviour")
        assert admin.get("/_admin/behaviour").json()["name"] == "dataset-jobs"


def test_the_bounds_themselves_are_accepted_and_served(server: ServerProcess) -> None:
    edge = {**BASE, "rules": [_rule({"kind": "miscount", "accepted_delta": 10**9, "rejected_delta": -(10**9)})],
            "sync": {"fence": {"type": "idempotency_key", "retention_seconds": 100 * 366 * 86_400}}}
    with _admin(server) as admin:
        assert admin.put("/_admin/behaviour", json=edge).status_code == 200
        try:
            answer = httpx.post(server.data_url + BATCHES, params=RANGE, json=rows_for(["2026-07-01"]),
                                headers={"Idempotency-Key": "edge-1"}, timeout=30)
            assert answer.status_code == 200, answer.text
            assert (answer.json()["accepted_rows"], answer.json()["rejected_rows"]) == (10**9 + 1, -(10**9))
            effect = admin_items(admin, "effects", idempotency_key="edge-1")[0]
            assert effect["reported_accepted_rows"] == 10**9 + 1 and effect["accepted_rows"] == 1
        finally:
            admin.put("/_admin/behaviour", content=(RECEIVERS / "dataset-jobs.yaml").read_bytes(),
                      headers={"content-type": "application/yaml"})


# --- a request whose ledger work fails ------------------------------------------------------------


def _with_trigger(state: Path, sql: str) -> None:
    """Make the ledger itself fail (a receiver bug stand-in): a trigger that aborts some write."""
    with sqlite3.connect(state / "ledger.sqlite3", timeout=30) as connection:
        connection.execute(sql)


def _drop_trigger(state: Path) -> None:
    with sqlite3.connect(state / "ledger.sqlite3", timeout=30) as connection:
        connection.execute("DROP TRIGGER boom")


@pytest.mark.parametrize(("personality", "trigger"), [
    ("stripe-like", "CREATE TRIGGER boom BEFORE INSERT ON effects BEGIN SELECT RAISE(ABORT, 'SENTINEL-x'); END"),
    ("json-batches", "CREATE TRIGGER boom BEFORE INSERT ON rows BEGIN SELECT RAISE(ABORT, 'SENTINEL-x'); END"),
    ("ietf-idempotency-draft",
     "CREATE TRIGGER boom BEFORE INSERT ON effects BEGIN SELECT RAISE(ABORT, 'SENTINEL-x'); END"),
])
def test_a_failed_sync_request_is_logged_and_frees_its_key(tmp_path: Path, personality: str, trigger: str) -> None:
    state = tmp_path / "state"
    with ServerProcess(RECEIVERS / f"{personality}.yaml", state):
        pass  # creates the ledger
    _with_trigger(state, trigger)
    key = "fails-once-1"
    header = f'"{key}"' if personality == "ietf-idempotency-draft" else key
    server = ServerProcess(RECEIVERS / f"{personality}.yaml", state).start()
    try:
        first = httpx.post(server.data_url + BATCHES, params=RANGE, json=rows_for(["2026-07-01"]),
                           headers={"Idempotency-Key": header}, timeout=30)
        assert first.status_code == 500 and first.json()["type"].endswith("internal_error"), first.text
        assert "SENTINEL" not in first.text
        with _admin(server) as admin:
            logged = admin_items(admin, "requests", idempotency_key=key)
            assert [(row["status"], row["outcome"], row["problem"], row["effect_id"], row["receipt_id"])
                    for row in logged] == [(500, "error", "internal_error", None, None)]
            assert admin_items(admin, "effects") == []
        _drop_trigger(state)
        retry = httpx.post(server.data_url + BATCHES, params=RANGE, json=rows_for(["2026-07-01"]),
                           headers={"Idempotency-Key": header}, timeout=30)
        # Not 409 "in use" for the key's 24 h: the failed attempt released it.
        assert retry.status_code in (200, 201), (retry.text, server.stop())
        with _admin(server) as admin:
            assert len(admin_items(admin, "effects", idempotency_key=key)) == 1
    finally:
        stderr = server.stop()
    assert "Traceback" not in stderr and "SENTINEL" not in stderr
    assert "internal error IntegrityError" in stderr


def test_a_failed_job_submit_and_poll_are_logged(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with ServerProcess(RECEIVERS / "dataset-jobs.yaml", state):
        pass
    _with_trigger(state, "CREATE TRIGGER boom BEFORE INSERT ON jobs BEGIN SELECT RAISE(ABORT, 'x'); END")
    files = {"file": ("job-key-1.csv.gz", csv_gz(rows_for(["2026-07-01"])), "application/gzip")}
    with ServerProcess(RECEIVERS / "dataset-jobs.yaml", state) as server, _admin(server) as admin:
        submit = httpx.post(server.data_url + "/mock/v1/dataset-jobs", files=files, data=RANGE, timeout=30)
        assert submit.status_code == 500, submit.text
        assert [(row["outcome"], row["job_id"]) for row in admin_items(admin, "requests")] == [("error", None)]
        _drop_trigger(state)
        _with_trigger(state, "CREATE TRIGGER boom BEFORE UPDATE ON jobs BEGIN SELECT RAISE(ABORT, 'x'); END")
        accepted = httpx.post(server.data_url + "/mock/v1/dataset-jobs", files=files, data=RANGE, timeout=30)
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        poll = httpx.get(f"{server.data_url}/mock/v1/dataset-jobs/{job_id}", timeout=30)
        assert poll.status_code == 500
        polls = admin_items(admin, "requests", endpoint="job_poll")
        assert [(row["outcome"], row["job_id"]) for row in polls] == [("error", job_id)]


# --- a behaviour switch while an upload is arriving --------------------------------------------------


SWITCHES = {
    "no_async_jobs": {**BASE, "name": "sync-only"},
    "other_resource": {"name": "other", "resources": {"events": {"mutation": "incremental_append",
                                                                 "date_field": "d"}},
                       "async_jobs": {"resource": "events"}},
    "jobs_disabled": {**BASE, "name": "disabled", "async_jobs": {"resource": "measurements", "enabled": False}},
}


def _multipart(key: str) -> tuple[bytes, str]:
    boundary = "b0undary"
    data = csv_gz(rows_for(["2026-07-01"]))
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"range_start\"\r\n\r\n2026-07-01\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"range_end\"\r\n\r\n2026-07-02\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{key}.csv.gz\"\r\n"
            "Content-Type: application/gzip\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize("switch", sorted(SWITCHES))
def test_a_switch_during_a_job_upload_is_not_a_500(tmp_path: Path, switch: str) -> None:
    with ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path / "state") as server, _admin(server) as admin:
        body, content_type = _multipart(f"mid-switch-{switch}")
        head = request_bytes("POST", "/mock/v1/dataset-jobs", [
            ("Host", authority(server.data_url)), ("Content-Type", content_type),
            ("Content-Length", str(len(body))), ("Connection", "close")])
        answers: list[Any] = []
        sender = threading.Thread(target=lambda: answers.append(
            exchange(server.data_url, head + body[:40], body[40:], pause=1.5)))
        sender.start()
        time.sleep(0.5)  # the head and part of the body have arrived: the handler awaits the rest
        assert admin.put("/_admin/behaviour", json=SWITCHES[switch]).status_code == 200
        sender.join(30)
        answer = answers[0]
        # The request is judged by the behaviour it arrived under, from its first byte to its answer.
        assert answer.status == 202, answer.raw[:400]
        job_id = json.loads(answer.body)["job_id"]
        assert httpx.get(f"{server.data_url}/mock/v1/dataset-jobs/{job_id}", timeout=30).status_code < 500
        for what in ("jobs", "effects", "requests", "stats"):
            assert admin.get(f"/_admin/{what}").status_code == 200
    assert "Traceback" not in server.stop()


def test_a_switch_during_a_sync_upload_is_judged_by_the_first_behaviour(tmp_path: Path) -> None:
    with ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path / "state") as server, _admin(server) as admin:
        body = json.dumps(rows_for(["2026-07-01"])).encode()
        head = request_bytes("POST", BATCHES + "?range_start=2026-07-01&range_end=2026-07-02", [
            ("Host", authority(server.data_url)), ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))), ("Connection", "close")])
        answers: list[Any] = []
        sender = threading.Thread(target=lambda: answers.append(
            exchange(server.data_url, head + body[:5], body[5:], pause=1.5)))
        sender.start()
        time.sleep(0.5)
        assert admin.put("/_admin/behaviour", json=SWITCHES["other_resource"]).status_code == 200
        sender.join(30)
        assert answers[0].status == 200, answers[0].raw[:400]
        assert len(admin_items(admin, "effects")) == 1


# --- a large behaviour document --------------------------------------------------------------------


def _large_document(target: int) -> bytes:
    """A valid behaviour of many rules, just under ``target`` bytes of YAML."""
    head = (b"name: large\nresources:\n  measurements: {mutation: partition_replace, date_field: business_date}\n"
            b"rules:\n")
    rule = ("- name: rule-{:06d}\n  match: {{endpoints: [summary]}}\n  when: {{nth: [100000000]}}\n"
            "  action: {{kind: delay, seconds: 1}}\n")
    count = (target - len(head)) // len(rule.format(0))
    return head + "".join(rule.format(index) for index in range(count)).encode()


def test_a_document_over_the_bound_is_413(server: ServerProcess) -> None:
    with _admin(server) as admin:
        too_large = b"name: x\n" + b"#" * MAX_BYTES
        response = admin.put("/_admin/behaviour", content=too_large, headers={"content-type": "application/yaml"})
        assert response.status_code == 413 and response.json()["type"].endswith("body_too_large")
        assert admin.get("/_admin/behaviour").json()["name"] == "dataset-jobs"


def test_the_data_api_answers_while_a_large_document_is_parsed(server: ServerProcess) -> None:
    document = _large_document(MAX_BYTES // 2)
    finished: dict[str, float] = {}

    def put() -> None:
        with _admin(server) as admin:
            response = admin.put("/_admin/behaviour", content=document, headers={"content-type": "application/yaml"})
            assert response.status_code == 200, response.text[:300]
        finished["put"] = time.monotonic()

    summary = f"{server.data_url}/mock/v1/resources/measurements/summary"
    putter = threading.Thread(target=put)
    started = time.monotonic()
    putter.start()
    time.sleep(0.05)  # the document is being received and parsed
    with httpx.Client(timeout=30) as client:
        assert client.get(summary).status_code == 200
    finished["summary"] = time.monotonic()
    putter.join(120)
    try:
        # Ordering, not a speed target: the read was answered while the parse still ran.
        assert finished["summary"] < finished["put"], (finished, started)
    finally:
        with _admin(server) as admin:
            admin.put("/_admin/behaviour", content=(RECEIVERS / "dataset-jobs.yaml").read_bytes(),
                      headers={"content-type": "application/yaml"})
