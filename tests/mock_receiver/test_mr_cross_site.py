"""Cross-site writes to the data API of a real `mock-receiver serve`: what a web page can make a browser
send without a preflight (an Origin, a form content type or none) is refused with 403 before anything is
read or applied, unless the behaviour lists the page's origin; the sinks' own requests (no Origin) and
requests no browser sends without a preflight pass."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mr_support import ADMIN_HEADERS, RECEIVERS, ServerProcess, admin_items, csv_gz, job_files, rows_for
from mr_wire import authority, exchange, request_bytes

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

RANGE = {"range_start": "2026-07-01", "range_end": "2026-07-02"}
BATCHES = "/mock/v1/resources/measurements/batches"
JOBS = "/mock/v1/dataset-jobs"
PAGE = "http://evil.example"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path_factory.mktemp("xsite")).start()
    yield process
    stderr = process.stop()
    assert "Traceback" not in stderr, stderr[-3000:]


@pytest.fixture
def admin(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.admin_url, headers=ADMIN_HEADERS, timeout=30) as client:
        yield client
        client.put("/_admin/behaviour", content=(RECEIVERS / "dataset-jobs.yaml").read_bytes(),
                   headers={"content-type": "application/yaml"})
        client.post("/_admin/reset")


def _form_requests(server: ServerProcess) -> list[dict[str, Any]]:
    """httpx keyword arguments for requests a page can send cross-site without a preflight."""
    files, data = job_files("xsite-key", rows_for(["2026-07-01"]), RANGE["range_start"], RANGE["range_end"])
    sync_files = {"file": ("rows.csv", csv_gz(rows_for(["2026-07-01"])), "application/gzip")}
    return [
        {"method": "POST", "url": server.data_url + JOBS, "files": files, "data": data},
        {"method": "POST", "url": server.data_url + BATCHES, "files": sync_files, "data": RANGE},
        {"method": "POST", "url": server.data_url + BATCHES, "params": RANGE,
         "content": json.dumps(rows_for(["2026-07-01"])).encode(), "headers": {"content-type": "text/plain"}},
        {"method": "POST", "url": server.data_url + BATCHES, "params": RANGE, "content": b"a=1",
         "headers": {"content-type": "application/x-www-form-urlencoded"}},
        {"method": "POST", "url": server.data_url + BATCHES, "params": RANGE, "content": b"[]",
         "headers": {"content-type": "Text/Plain; charset=utf-8"}},
        {"method": "POST", "url": server.data_url + "/oauth/token", "content": b"grant_type=client_credentials",
         "headers": {"content-type": "application/x-www-form-urlencoded"}},
        {"method": "PUT", "url": server.data_url + BATCHES, "params": RANGE, "files": sync_files},
    ]


@pytest.mark.parametrize("origin", [PAGE, "null", "https://evil.example:8443", "HTTP://EVIL.EXAMPLE"])
def test_form_requests_with_a_foreign_origin_are_refused(server: ServerProcess, admin: httpx.Client,
                                                         origin: str) -> None:
    for request in _form_requests(server):
        headers = {**request.pop("headers", {}), "Origin": origin}
        response = httpx.request(**request, headers=headers, timeout=30)
        assert response.status_code == 403, (request["url"], response.text)
        assert response.json()["type"].endswith("cross_site_request")
    assert admin_items(admin, "effects") == [] and admin_items(admin, "jobs") == []
    assert admin_items(admin, "requests") == []  # refused before any handler: not in the ledger
    assert admin.get("/_admin/stats").json()["cross_site_refused"] == len(_form_requests(server))


def test_the_receivers_own_origin_is_no_exception(server: ServerProcess, admin: httpx.Client) -> None:
    """Under DNS rebinding a page's Origin equals the Host it sends: the data API trusts neither."""
    files, data = job_files("rebound", rows_for(["2026-07-01"]), RANGE["range_start"], RANGE["range_end"])
    response = httpx.post(server.data_url + JOBS, files=files, data=data,
                          headers={"Origin": server.data_url}, timeout=30)
    assert response.status_code == 403
    assert admin_items(admin, "jobs") == []


def test_a_bodyless_post_and_two_origins_are_refused(server: ServerProcess, admin: httpx.Client) -> None:
    own = ("Host", authority(server.data_url))
    bare = exchange(server.data_url, request_bytes("POST", JOBS, [own, ("Origin", PAGE), ("Content-Length", "0")]))
    assert bare.status == 403, bare.raw[:300]
    twice = exchange(server.data_url, request_bytes("POST", BATCHES + "?range_start=2026-07-01&range_end=2026-07-02", [
        own, ("Origin", "https://allowed.example"), ("Origin", PAGE), ("Content-Type", "text/plain"),
        ("Content-Length", "2")], b"[]"))
    assert twice.status == 403, twice.raw[:300]


def test_the_sinks_requests_without_origin_still_work(server: ServerProcess, admin: httpx.Client) -> None:
    files, data = job_files("no-origin", rows_for(["2026-07-01"]), RANGE["range_start"], RANGE["range_end"])
    assert httpx.post(server.data_url + JOBS, files=files, data=data, timeout=30).status_code == 202
    sync_files = {"file": ("rows.csv", csv_gz(rows_for(["2026-07-01"])), "application/gzip")}
    assert httpx.post(server.data_url + BATCHES, files=sync_files, data=RANGE, timeout=30).status_code == 200
    # Reads are not writes, and a JSON body from a page would need a preflight first.
    assert httpx.get(f"{server.data_url}/mock/v1/resources/measurements/summary",
                     headers={"Origin": PAGE}, timeout=30).status_code == 200
    assert httpx.post(server.data_url + BATCHES, params=RANGE, json=rows_for(["2026-07-01"]),
                      headers={"Origin": PAGE}, timeout=30).status_code == 200
    assert len(admin_items(admin, "effects")) == 2


def test_a_behaviour_opts_in_for_listed_origins_only(server: ServerProcess, admin: httpx.Client) -> None:
    document = json.loads(json.dumps(admin.get("/_admin/behaviour").json()))
    document["cross_site"] = {"form_origins": ["https://uploader.example", "http://[::1]:8080"]}
    assert admin.put("/_admin/behaviour", json=document).status_code == 200
    sync_files = {"file": ("rows.csv", csv_gz(rows_for(["2026-07-01"])), "application/gzip")}
    for origin, status in (("https://uploader.example", 200), ("HTTPS://UPLOADER.EXAMPLE", 200),
                           ("http://[::1]:8080", 200), ("https://uploader.example:444", 403), (PAGE, 403),
                           ("null", 403)):
        response = httpx.post(server.data_url + BATCHES, files=sync_files, data=RANGE,
                              headers={"Origin": origin}, timeout=30)
        assert response.status_code == status, (origin, response.text)
    document["cross_site"] = {"form_origins": ["*"]}
    assert admin.put("/_admin/behaviour", json=document).status_code == 200
    assert httpx.post(server.data_url + BATCHES, files=sync_files, data=RANGE,
                      headers={"Origin": PAGE}, timeout=30).status_code == 200


@pytest.mark.parametrize("origins", [["null"], ["evil.example"], ["http://a.example/path"], ["ftp://a.example"],
                                     ["http://a.example:99999x"]])
def test_form_origins_must_be_origins(admin: httpx.Client, origins: list[str]) -> None:
    document = admin.get("/_admin/behaviour").json()
    document["cross_site"] = {"form_origins": origins}
    response = admin.put("/_admin/behaviour", json=document)
    assert response.status_code == 422 and origins[0] not in response.text
