"""Bad requests are problem+json 4xx, logged as rejected, never applied; no payload value in the log."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest
from mr_support import admin_items, bundled, client_for, csv_gz, job_files, rows_for

from mock_receiver.app import LEDGER_FILE

pytestmark = pytest.mark.timeout(60)

URL = "/mock/v1/resources/measurements/batches"
RANGE = {"range_start": "2026-07-01", "range_end": "2026-07-02"}
BOUNDARY = "b0undary"
JSON = {"content-type": "application/json"}


def _multipart(*parts: bytes) -> bytes:
    return b"".join(parts)


@pytest.mark.parametrize(("headers", "body", "status", "slug"), [
    ({"content-type": "application/json"}, b"[{", 400, "malformed_json"),
    ({"content-type": "application/json"}, b'{"a": 1}', 422, "not_an_array"),
    ({"content-type": "application/json"}, b"[1, 2]", 422, "row_not_object"),
    ({"content-type": "application/json"}, b'[{"business_date": "2026-07-01", "v": {"x": 1}}]', 422,
     "nested_value"),
    ({"content-type": "application/json"}, b"[" * 100_000, 400, "json_too_deep"),
    ({"content-type": "application/json"}, b'[{"v": NaN}]', 400, "malformed_json"),
    ({"content-type": "application/json"}, b"\xff\xfe", 400, "invalid_utf8"),
    ({"content-type": "text/csv"}, b"a,b\n1,2,3\n", 400, "malformed_csv"),
    ({"content-type": "text/csv"}, b"a,a\n1,2\n", 400, "malformed_csv"),
    ({"content-type": "application/xml"}, b"<rows/>", 415, "unsupported_media_type"),
    ({"content-type": "application/json", "content-encoding": "br"}, b"[]", 415, "unsupported_encoding"),
    ({"content-type": "application/json", "content-encoding": "gzip"}, b"not gzip", 400, "malformed_gzip"),
    ({"content-type": "application/json", "content-encoding": "gzip"}, gzip.compress(b"[]", mtime=0)[:-6], 400,
     "malformed_gzip"),
    ({"content-type": f"multipart/form-data; boundary={BOUNDARY}"},
     b"--b0undary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.csv\"\r\n\r\na\r\n", 400,
     "malformed_multipart"),
    ({"content-type": "multipart/form-data"}, b"--x--", 400, "malformed_multipart"),
    ({"content-type": f"multipart/form-data; boundary={BOUNDARY}"},
     b"--b0undary\r\nContent-Disposition: form-data; name=\"range_start\"\r\n\r\n2026-07-01\r\n--b0undary--\r\n",
     400, "file_part_count"),
])
def test_malformed_bodies_are_rejected_without_effect(tmp_path: Path, headers, body, status, slug) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        response = client.post(URL, params=RANGE, content=body, headers=headers)
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/problem+json"
        problem = response.json()
        assert problem["type"].endswith(slug) and problem["status"] == status
        assert "Traceback" not in response.text
        assert admin_items(client, "effects") == []
        logged = admin_items(client, "requests")
        assert [(r["outcome"], r["status"], r["problem"]) for r in logged] == [("rejected", status, slug)]


def test_two_file_parts_are_rejected(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        rows = rows_for(["2026-07-01"])
        files = [("file", ("k.csv.gz", csv_gz(rows), "application/gzip")),
                 ("file2", ("k2.csv.gz", csv_gz(rows), "application/gzip"))]
        response = client.post("/mock/v1/dataset-jobs", files=files, data=RANGE)
        assert response.status_code == 400 and response.json()["type"].endswith("file_part_count")
        assert admin_items(client, "jobs") == []


def test_bad_scope_values_are_422(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        for scope in ({"range_start": "2026-07-02", "range_end": "2026-07-01"},
                      {"range_start": "yesterday", "range_end": "2026-07-01"},
                      {"range_start": "2026-07-01"}):
            response = client.post(URL, params=scope, json=rows_for(["2026-07-01"]))
            assert response.status_code == 422 and response.json()["type"].endswith("bad_scope")


def test_unknown_resource_and_route_are_problem_404s(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        response = client.post("/mock/v1/resources/unknown/batches", json=[])
        assert response.status_code == 404 and response.json()["type"].endswith("unknown_resource")
        route = client.get("/no/such/route")
        assert route.status_code == 404 and route.headers["content-type"] == "application/problem+json"


def test_admin_behaviour_switch_validates_and_keeps_the_old_one_on_error(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        bad = bundled("bare-409").model_dump(mode="json")
        bad["sync"]["fence"]["type"] = "psychic"
        bad["secret_looking_field"] = "sentinel-value-XYZ"
        response = client.put("/_admin/behaviour", content=json.dumps(bad), headers=JSON)
        assert response.status_code == 422
        assert response.headers["content-type"] == "application/problem+json"
        assert "sentinel-value-XYZ" not in response.text
        assert client.get("/_admin/behaviour").json()["name"] == "stripe-like"
        # a body that says JSON and is not: the strict reader's 400, as for data rows
        assert client.put("/_admin/behaviour", content=b"{unclosed", headers=JSON).status_code == 400
        good = client.put("/_admin/behaviour", content=json.dumps(bundled("bare-409").model_dump(mode="json")),
                          headers=JSON)
        assert good.status_code == 200
        assert client.get("/_admin/behaviour").json()["name"] == "bare-409"
        assert client.get("/_admin/health").json()["behaviour"] == "bare-409"
        # The switch is live: the bare-409 fence now answers an exact duplicate with an empty 409.
        rows = rows_for(["2026-07-01"])
        assert client.post(URL, params=RANGE, json=rows).status_code == 200
        duplicate = client.post(URL, params=RANGE, json=rows)
        assert (duplicate.status_code, duplicate.content) == (409, b"")
        assert len(admin_items(client, "effects")) == 1


def test_admin_query_validation_is_a_problem(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        response = client.get("/_admin/requests", params={"limit": 0})
        assert response.status_code == 422
        assert response.headers["content-type"] == "application/problem+json"
        assert client.post("/_admin/clock/advance", json={"seconds": -5}).status_code == 422


def test_reset_forgets_everything(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        client.post(URL, params=RANGE, json=rows_for(["2026-07-01"]))
        client.post("/_admin/clock/advance", json={"seconds": 100})
        assert client.post("/_admin/reset").status_code == 200
        assert admin_items(client, "effects") == admin_items(client, "requests") == []
        assert client.get("/_admin/clock").json()["offset_seconds"] == 0
        summary = client.get("/mock/v1/resources/measurements/summary", params=RANGE).json()
        assert summary["row_count"] == 0


SENTINEL = "SENTINEL-ROW-VALUE-7f3a9c"


def test_payload_values_never_reach_the_request_log(tmp_path: Path) -> None:
    """Sentinel row values (sync JSON, sync CSV, async gzip multipart, rejected bodies) stay out of the log."""
    rows = [{"business_date": "2026-07-01", "secret": SENTINEL}]
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        client.post(URL, params=RANGE, json=rows, headers={"Idempotency-Key": "s1"})
        client.post(URL, params=RANGE, content=f"[{{\"secret\": \"{SENTINEL}\"".encode(),
                    headers={"content-type": "application/json"})
        files, data = job_files("s2", rows, "2026-07-01", "2026-07-02")
        job_id = client.post("/mock/v1/dataset-jobs", files=files, data=data).json()["job_id"]
        client.get(f"/mock/v1/dataset-jobs/{job_id}")
        client.get(f"/mock/v1/dataset-jobs/{job_id}")
        listing = json.dumps([admin_items(client, what) for what in ("requests", "effects", "jobs")])
        assert SENTINEL not in listing
        assert len(admin_items(client, "requests")) == 5
    connection = sqlite3.connect(tmp_path / LEDGER_FILE)
    try:
        for table in ("requests", "effects", "jobs", "fences"):
            for row in connection.execute(f"SELECT * FROM {table}"):
                assert SENTINEL not in repr(row), table
        # The receiver's own data table holds applied rows (that is its data, not a log).
        stored = b"".join(bytes(row[0]) for row in connection.execute("SELECT encoded FROM rows"))
        assert SENTINEL.encode() in stored
    finally:
        connection.close()
