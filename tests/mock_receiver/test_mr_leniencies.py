"""Leaks and leniencies, through a real `mock-receiver serve`: trace logs without query values, no
non-finite numbers, no repeated JSON member names, one fence key per request, dates only as
YYYY-MM-DD, numbers only as numbers, one strict admin-header rule, no mtls switch on a plain listener.
Every refusal is a 4xx problem, logged where it is a data request, and changes nothing."""

from __future__ import annotations

import gzip
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mr_support import ADMIN_HEADERS, MOCK_RECEIVER_BIN, RECEIVERS, ServerProcess, admin_items, csv_gz, rows_for
from mr_wire import authority, exchange, request_bytes

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

RANGE = {"range_start": "2026-07-01", "range_end": "2026-07-02"}
BATCHES = "/mock/v1/resources/measurements/batches"
SENTINEL = "SENTINEL-query-7c1e"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(RECEIVERS / "stripe-like.yaml", tmp_path_factory.mktemp("lenient")).start()
    yield process
    stderr = process.stop()
    assert "Traceback" not in stderr, stderr[-3000:]


@pytest.fixture
def admin(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.admin_url, headers=ADMIN_HEADERS, timeout=30) as client:
        yield client
        client.post("/_admin/reset")


def _problem(response: httpx.Response, status: int, slug: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"].endswith(slug), response.text


def _post(server: ServerProcess, content: bytes, content_type: str, **kwargs: Any) -> httpx.Response:
    return httpx.post(server.data_url + BATCHES, params=kwargs.pop("params", RANGE), content=content,
                      headers={"content-type": content_type, **kwargs.pop("headers", {})}, timeout=30, **kwargs)


# --- trace logs ------------------------------------------------------------------------------------


def test_trace_logs_name_query_parameters_but_never_their_values(tmp_path: Path) -> None:
    process = ServerProcess(RECEIVERS / "stripe-like.yaml", tmp_path / "s", extra=("--log-level", "trace")).start()
    try:
        httpx.get(f"{process.data_url}/mock/v1/resources/measurements/summary",
                  params={"api_key": SENTINEL, "range_start": "2026-07-01", "range_end": "2026-07-02"}, timeout=30)
        httpx.post(process.data_url + BATCHES, params={**RANGE, "token": SENTINEL, "a b%": SENTINEL},
                   json=rows_for(["2026-07-01"]), timeout=30)
        httpx.get(f"{process.admin_url}/_admin/requests", params={"mutation_key": SENTINEL}, timeout=30)
        exchange(process.data_url, f"GET /x?{SENTINEL} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".encode())
    finally:
        stderr = process.stop()
    assert "Started scope=" in stderr  # trace logging is on
    assert "api_key=<redacted>" in stderr and "range_start=<redacted>" in stderr
    assert SENTINEL not in stderr and "Traceback" not in stderr


# --- JSON: non-finite numbers and repeated member names --------------------------------------------------


NON_FINITE = ["1e400", "1e999", "-1e400", "1E+309", "123456789e400"]


@pytest.mark.parametrize("number", NON_FINITE)
def test_non_finite_numbers_in_rows_are_refused_and_logged(server: ServerProcess, admin: httpx.Client,
                                                           number: str) -> None:
    row = f'{{"business_date": "2026-07-01", "value": {number}}}'
    forms = [(f"[{row}]".encode(), "application/json"), (f"{row}\n".encode(), "application/x-ndjson"),
             (gzip.compress(f"[{row}]".encode(), mtime=0), "application/gzip")]
    for body, content_type in forms:
        _problem(_post(server, body, content_type), 400, "non_finite_number")
    files = {"file": ("rows.json", f"[{row}]".encode(), "application/json")}
    _problem(httpx.post(server.data_url + BATCHES, files=files, data=RANGE, timeout=30), 400, "non_finite_number")
    assert admin_items(admin, "effects") == []
    assert [row["problem"] for row in admin_items(admin, "requests")] == ["non_finite_number"] * 4


def test_large_but_finite_numbers_are_still_accepted(server: ServerProcess, admin: httpx.Client) -> None:
    body = b'[{"business_date": "2026-07-01", "a": 1e308, "b": 1e-400, "c": 123456789012345678901234567890}]'
    assert _post(server, body, "application/json").status_code == 200


DUPLICATES = [  # rows (the first of each list is a good one)
    ['{"business_date": "2026-07-01", "v": 0}', '{"business_date": "2026-07-01", "id": "a", "id": "b"}'],
    ['{"business_date": "2026-07-01", "business_date": "2026-07-02"}'],
    ['{"business_date": "2026-07-01", "w": 1, "w": 1}'],
    ['{"business_date": "2026-07-01", "\\u0069d": "a", "id": "b"}'],   # the same name, once escaped
]


@pytest.mark.parametrize("rows", DUPLICATES)
def test_repeated_member_names_in_rows_are_refused(server: ServerProcess, admin: httpx.Client,
                                                   rows: list[str]) -> None:
    _problem(_post(server, f"[{', '.join(rows)}]".encode(), "application/json"), 400, "duplicate_member")
    _problem(_post(server, "\n".join(rows).encode() + b"\n", "application/x-ndjson"), 400, "duplicate_member")
    assert admin_items(admin, "effects") == []
    assert [row["problem"] for row in admin_items(admin, "requests")] == ["duplicate_member"] * 2


@pytest.mark.parametrize("body", [b'{"seconds": 5, "seconds": 7}', b'{"seconds": 1e400}', b'{"seconds": 1e999}',
                                  b'{"seconds": NaN}', b'{"seconds": Infinity}'])
def test_the_clock_body_is_strict_json(admin: httpx.Client, body: bytes) -> None:
    response = admin.post("/_admin/clock/advance", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert admin.get("/_admin/clock").json()["offset_seconds"] == 0


@pytest.mark.parametrize("path", ["/_admin/reset", "/_admin/clock/advance", "/_admin/behaviour"])
def test_every_admin_json_body_refuses_repeated_names(server: ServerProcess, admin: httpx.Client, path: str) -> None:
    httpx.post(server.data_url + BATCHES, params=RANGE, json=rows_for(["2026-07-01"]), timeout=30)
    body = {"/_admin/reset": b'{"a": 1, "a": 2}', "/_admin/clock/advance": b'{"seconds": 5, "seconds": 6}',
            "/_admin/behaviour": b'{"name": "x", "name": "y", "resources": {"m": {"mutation": "incremental_append",'
                                 b' "date_field": "d"}}}'}[path]
    method = "PUT" if path.endswith("behaviour") else "POST"
    response = admin.request(method, path, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["type"].endswith("duplicate_member")
    assert len(admin_items(admin, "effects")) == 1 and admin.get("/_admin/behaviour").json()["name"] == "stripe-like"


@pytest.mark.parametrize("body", [{"seconds": "5"}, {"seconds": True}, {"seconds": "5.0"}, {"seconds": None},
                                  {"seconds": [5]}, {"seconds": {"n": 5}}, {"seconds": -1}, [5], "5"])
def test_the_clock_takes_only_a_number(admin: httpx.Client, body: object) -> None:
    response = admin.post("/_admin/clock/advance", json=body)
    assert response.status_code == 422, response.text
    assert "5" not in json.dumps(response.json().get("errors", []))  # locations, never the values
    assert admin.get("/_admin/clock").json()["offset_seconds"] == 0
    assert admin.post("/_admin/clock/advance", json={"seconds": 5}).json()["offset_seconds"] == 5
    assert admin.post("/_admin/clock/advance", json={"seconds": 0.5}).json()["offset_seconds"] == 5.5


STRINGS_AS_NUMBERS = [
    {"rules": [{"name": "r", "match": {"endpoints": ["summary"]}, "when": {"probability": 0.5, "seed": "5"},
                "action": {"kind": "delay", "seconds": 1}}]},
    {"rules": [{"name": "r", "match": {"endpoints": ["summary"]}, "when": {"nth": ["1"]},
                "action": {"kind": "delay", "seconds": 1}}]},
    {"rules": [{"name": "r", "match": {"endpoints": ["summary"]}, "when": {"always": "true"},
                "action": {"kind": "delay", "seconds": 1}}]},
    {"rules": [{"name": "r", "match": {"endpoints": ["summary"]}, "when": {"always": True},
                "action": {"kind": "delay", "seconds": True}}]},
    {"limits": {"max_rows": True}},
    {"limits": {"max_rows": 10.0}},
    {"limits": {"max_rows": "100"}},
    {"sync": {"fence": {"type": "idempotency_key", "retention_seconds": "60"}}},
    {"sync": {"success_status": "201"}},
]


@pytest.mark.parametrize("changes", STRINGS_AS_NUMBERS)
def test_behaviour_numbers_are_numbers(tmp_path: Path, admin: httpx.Client, changes: dict[str, Any]) -> None:
    document = {"name": "strict", "resources": {"measurements": {"mutation": "partition_replace",
                                                                 "date_field": "business_date"}}, **changes}
    response = admin.put("/_admin/behaviour", json=document)
    assert response.status_code == 422, response.text
    assert admin.get("/_admin/behaviour").json()["name"] == "stripe-like"
    path = tmp_path / "strict.yaml"
    path.write_text(json.dumps(document))
    result = subprocess.run([str(MOCK_RECEIVER_BIN), "validate", str(path)], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_json_exponents_are_numbers_in_behaviour_documents(admin: httpx.Client) -> None:
    """A JSON number with an exponent (a string in YAML 1.1) is the number it says; 1e400 is refused."""
    document = (b'{"name": "exp", "resources": {"measurements": {"mutation": "partition_replace", '
                b'"date_field": "business_date"}}, "sync": {"fence": {"type": "idempotency_key", '
                b'"retention_seconds": 864E2}}}')
    response = admin.put("/_admin/behaviour", content=document, headers={"content-type": "application/json"})
    assert response.status_code == 200 and response.json()["sync"]["fence"]["retention_seconds"] == 86400
    refused = admin.put("/_admin/behaviour", content=document.replace(b"864E2", b"1e400"),
                        headers={"content-type": "application/json"})
    assert refused.status_code == 400 and refused.json()["type"].endswith("non_finite_number")
    admin.put("/_admin/behaviour", content=(RECEIVERS / "stripe-like.yaml").read_bytes(),
              headers={"content-type": "application/yaml"})


# --- one fence key ---------------------------------------------------------------------------------


def test_two_idempotency_key_headers_are_400(server: ServerProcess, admin: httpx.Client) -> None:
    body = json.dumps(rows_for(["2026-07-01"])).encode()
    query = "?range_start=2026-07-01&range_end=2026-07-02"
    for keys in (["k-1", "k-1"], ["k-1", "k-2"], ["k-1", ""]):
        answer = exchange(server.data_url, request_bytes("POST", BATCHES + query, [
            ("Host", authority(server.data_url)), ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))), *(("Idempotency-Key", key) for key in keys)], body))
        assert answer.status == 400 and b"duplicate_fence_key" in answer.body, answer.raw[:300]
    assert admin_items(admin, "effects") == []
    assert [row["problem"] for row in admin_items(admin, "requests")] == ["duplicate_fence_key"] * 3


# --- dates -------------------------------------------------------------------------------------------


# the last day is written in fullwidth digits
@pytest.mark.parametrize("day", ["2026-W27-3", "2026W273", "20260701", "2026-182", "2026-07-01T00:00:00",
                                 "2026-7-1", "+2026-07-01", "\uff12\uff10\uff12\uff16-07-01"])
def test_only_yyyy_mm_dd_ranges_are_accepted(server: ServerProcess, admin: httpx.Client, day: str) -> None:
    rows = rows_for(["2026-07-01"])
    _problem(httpx.post(server.data_url + BATCHES, params={"range_start": day, "range_end": "2026-07-02"},
                        json=rows, timeout=30), 422, "bad_scope")
    files = {"file": ("rows.csv", csv_gz(rows), "application/gzip")}
    _problem(httpx.post(server.data_url + BATCHES, files=files, data={"range_start": "2026-06-30", "range_end": day},
                        timeout=30), 422, "bad_scope")
    _problem(httpx.get(f"{server.data_url}/mock/v1/resources/measurements/summary",
                       params={"range_start": day, "range_end": "2026-07-02"}, timeout=30), 422, "bad_scope")
    assert admin_items(admin, "effects") == []


def test_row_dates_in_other_forms_are_rejected_per_record(server: ServerProcess, admin: httpx.Client) -> None:
    rows = [{"business_date": day, "v": str(index)} for index, day in enumerate(
        ["2026-07-01", "2026-W27-3", "2026-182", "20260701", "2026-07-01T10:00:00Z", "2026-07-01 junk"])]
    answer = httpx.post(server.data_url + BATCHES, params=RANGE, json=rows, timeout=30).json()
    assert (answer["accepted_rows"], answer["rejected_rows"]) == (2, 4)
    assert {item["index"] for item in answer["records"]} == {1, 2, 3, 5}


# --- the admin header --------------------------------------------------------------------------------


ADMIN_VALUES = {
    "one": ([("X-Restproof-Admin", "1")], 200),
    "one_with_spaces": ([("X-Restproof-Admin", "  1 ")], 200),
    "one_with_tabs": ([("X-Restproof-Admin", "\t1\t")], 200),
    "zero_one": ([("X-Restproof-Admin", "01")], 403),
    "true": ([("X-Restproof-Admin", "true")], 403),
    "one_one": ([("X-Restproof-Admin", "1 1")], 403),
    "one_comma": ([("X-Restproof-Admin", "1,")], 403),
    "list": ([("X-Restproof-Admin", "1, 1")], 403),
    "twice": ([("X-Restproof-Admin", "1"), ("X-Restproof-Admin", "1")], 403),
    "twice_other": ([("X-Restproof-Admin", "1"), ("X-Restproof-Admin", "2")], 403),
    "empty": ([("X-Restproof-Admin", "")], 403),
    "absent": ([], 403),
    "superscript": ([("X-Restproof-Admin", "\xb9")], 403),
}


@pytest.mark.parametrize("name", sorted(ADMIN_VALUES))
def test_the_admin_header_rule(server: ServerProcess, name: str) -> None:
    headers, status = ADMIN_VALUES[name]
    answer = exchange(server.admin_url, request_bytes("POST", "/_admin/clock/advance", [
        ("Host", authority(server.admin_url)), ("Content-Type", "application/json"), ("Content-Length", "14"),
        *headers], b'{"seconds": 1}'))
    assert answer.status == status, answer.raw[:300]
    if status == 403:
        assert b"admin_header_required" in answer.body


# --- mtls on a plain listener ------------------------------------------------------------------------


def test_switching_to_mtls_on_a_plain_listener_is_refused(server: ServerProcess, admin: httpx.Client) -> None:
    document = {"name": "mtls", "resources": {"measurements": {"mutation": "partition_replace",
                                                               "date_field": "business_date"}},
                "auth": {"method": "mtls", "subject_cn": "sink"}}
    response = admin.put("/_admin/behaviour", json=document)
    _problem(response, 422, "invalid_behaviour")
    assert "tls" in response.json()["detail"].lower()
    assert admin.get("/_admin/behaviour").json()["name"] == "stripe-like"
    assert httpx.post(server.data_url + BATCHES, params=RANGE, json=rows_for(["2026-07-01"]),
                      timeout=30).status_code == 200
