"""Bounds on both listeners of a real `mock-receiver serve` (short timeouts here, so the tests are quick):
a half-sent head, a body that stops, a body that trickles, a chunk size of 2**80 followed by nothing,
an endless body; each ends within its stated bound with a 4xx (or a closed connection for a client that
sent nothing), the data requests among them are in the request log, and the server keeps answering."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mr_support import ADMIN_HEADERS, MOCK_RECEIVER_BIN, RECEIVERS, ServerProcess, admin_items
from mr_wire import authority, exchange, request_bytes

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

HEADER, IDLE, TOTAL = 1.0, 1.0, 3.0
SLACK = 2.5
"""Seconds a bound may be overrun on a loaded machine (timers, scheduling) before the test calls it a hang."""
BATCHES = "/mock/v1/resources/measurements/batches?range_start=2026-07-01&range_end=2026-07-02"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path_factory.mktemp("bounds"), extra=(
        "--header-timeout", str(HEADER), "--body-idle-timeout", str(IDLE), "--body-timeout", str(TOTAL))).start()
    yield process
    stderr = process.stop()
    assert "Traceback" not in stderr, stderr[-3000:]


def _alive(server: ServerProcess) -> None:
    assert httpx.get(f"{server.admin_url}/_admin/health", timeout=10).status_code == 200
    assert httpx.get(f"{server.data_url}/mock/v1/resources/measurements/summary", timeout=10).status_code == 200


def _head(server: ServerProcess, url: str, method: str, path: str, extra: list[tuple[str, str]]) -> bytes:
    return request_bytes(method, path, [("Host", authority(url)), *extra])


@pytest.mark.parametrize("which", ["data", "admin"])
def test_a_half_sent_head_gets_408_within_the_header_timeout(server: ServerProcess, which: str) -> None:
    url = server.data_url if which == "data" else server.admin_url
    partial = [b"GET /mock/v1/resources/measurements/summary HTTP/1.1\r\nHost: 127.0.0.1\r\n",
               b"GET /_admin/health HTTP/1.1\r\nHost: 127.",
               b"POST /mock/v1/dataset-jobs HTTP/1.1\r\n",
               b"G"]
    for data in partial:
        answer = exchange(url, data)
        assert answer.status == 408 and b"head_timeout" in answer.body, answer.raw[:300]
        assert answer.seconds < HEADER + SLACK
    # one byte at a time, each before the last one would time out: the head as a whole is bounded
    answer = exchange(url, *[bytes([byte]) for byte in b"GET /_admin/health HTTP/1.1\r\nHost: x\r\n"], pause=0.2)
    assert answer.status == 408 and answer.seconds < 0.2 * 40 + SLACK
    _alive(server)


@pytest.mark.parametrize("which", ["data", "admin"])
def test_a_connection_that_sends_nothing_is_closed(server: ServerProcess, which: str) -> None:
    answer = exchange(server.data_url if which == "data" else server.admin_url)
    assert answer.raw == b"" and answer.seconds < HEADER + SLACK


def test_a_head_larger_than_the_bound_is_refused(server: ServerProcess) -> None:
    answer = exchange(server.data_url, b"GET /x HTTP/1.1\r\nHost: a\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n")
    assert answer.status is not None and 400 <= answer.status < 500, answer.raw[:200]
    _alive(server)


def test_a_body_that_stops_is_408_and_logged(server: ServerProcess) -> None:
    head = _head(server, server.data_url, "POST", BATCHES, [
        ("Content-Type", "application/json"), ("Content-Length", "1000"), ("Idempotency-Key", "stops-1")])
    answer = exchange(server.data_url, head + b'[{"business_date": ')
    assert answer.status == 408 and b"body_timeout" in answer.body, answer.raw[:300]
    assert "connection: close" in answer.head
    assert answer.seconds < IDLE + SLACK
    with httpx.Client(base_url=server.admin_url, timeout=10) as admin:
        rows = admin_items(admin, "requests", idempotency_key="stops-1")
        assert [(row["status"], row["problem"], row["effect_id"], row["body_bytes"]) for row in rows] == [
            (408, "body_timeout", None, len(b'[{"business_date": '))]


def test_a_trickling_body_is_bounded_in_total(server: ServerProcess) -> None:
    head = _head(server, server.data_url, "POST", BATCHES, [
        ("Content-Type", "application/json"), ("Content-Length", "1000"), ("Idempotency-Key", "trickles-1")])
    # a byte every half second never trips the idle bound, only the total one
    answer = exchange(server.data_url, head, *([b" "] * 40), pause=0.5)
    assert answer.status == 408 and b"body_timeout" in answer.body, answer.raw[:300]
    assert answer.seconds < TOTAL + SLACK


@pytest.mark.parametrize("size", [b"ffffffffffffffffffff", b"7fffffffffffffff", b"1000"])
def test_a_chunk_announced_and_never_sent_is_408(server: ServerProcess, size: bytes) -> None:
    head = _head(server, server.data_url, "POST", BATCHES, [
        ("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")])
    answer = exchange(server.data_url, head + size + b"\r\n[]")
    assert answer.status == 408 and b"body_timeout" in answer.body, answer.raw[:300]
    assert answer.seconds < IDLE + SLACK
    _alive(server)


def test_an_endless_chunked_body_is_413_at_the_body_limit(server: ServerProcess) -> None:
    """The behaviour's max_body_bytes (16 MB) counts what arrives, whatever a chunk header announced:
    the answer comes at the limit, not at the end of a body that never ends."""
    head = _head(server, server.data_url, "POST", BATCHES, [
        ("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")])
    chunk = b"100000\r\n" + b"[" * 0x100000 + b"\r\n"  # 1 MiB chunks
    answer = exchange(server.data_url, head, *([chunk] * 24))
    assert answer.status == 413 and b"body_too_large" in answer.body, answer.raw[:300]
    _alive(server)


def test_admin_bodies_are_bounded_in_size_and_time(server: ServerProcess) -> None:
    own = ("Host", authority(server.admin_url))
    slow = exchange(server.admin_url, request_bytes("PUT", "/_admin/behaviour", [
        own, ("X-Restproof-Admin", "1"), ("Content-Type", "application/yaml"), ("Content-Length", "500")],
        b"name: half\n"))
    assert slow.status == 408 and slow.seconds < IDLE + SLACK, slow.raw[:300]
    large = exchange(server.admin_url, request_bytes("POST", "/_admin/clock/advance", [
        own, ("X-Restproof-Admin", "1"), ("Content-Type", "application/json"), ("Content-Length", "9999999")]))
    assert large.status == 413, large.raw[:300]
    chunked = exchange(server.admin_url, request_bytes("POST", "/_admin/clock/advance", [
        own, ("X-Restproof-Admin", "1"), ("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")]),
        *([b"10000\r\n" + b" " * 0x10000 + b"\r\n"] * 4))
    assert chunked.status == 413, chunked.raw[:300]
    with httpx.Client(base_url=server.admin_url, headers=ADMIN_HEADERS, timeout=10) as admin:
        assert admin.get("/_admin/behaviour").json()["name"] == "dataset-jobs"
        assert admin.get("/_admin/clock").json()["offset_seconds"] == 0


def test_a_body_nobody_reads_cannot_hold_the_connection(server: ServerProcess) -> None:
    """A body refused as too large before it is read (413 at once, on its Content-Length) and an unknown
    path (404, the body never read): the rest is dropped as it arrives, may pause at most the idle bound
    and last at most the total bound, then the connection is closed."""
    large = request_bytes("POST", "/_admin/reset", [("Host", authority(server.admin_url)),
                                                    ("X-Restproof-Admin", "1"), ("Content-Type", "application/json"),
                                                    ("Content-Length", "100000000")])
    unknown = request_bytes("POST", "/mock/v1/nowhere", [("Host", authority(server.data_url)),
                                                         ("Content-Length", "100000000")])
    for url, head, status in ((server.admin_url, large, 413), (server.data_url, unknown, 404)):
        stalled = exchange(url, head + b" " * 1000, until_closed=True)
        assert stalled.status == status and stalled.seconds < IDLE + SLACK, stalled.raw[:300]
        streaming = exchange(url, head, *([b" " * 65536] * 100), pause=0.05, until_closed=True)
        assert streaming.status == status, streaming.raw[:300]
        assert streaming.seconds < TOTAL + 100 * 0.05 + SLACK


def test_a_body_that_ends_after_the_answer_leaves_the_connection_usable(server: ServerProcess) -> None:
    """The rest of an unread body is dropped, and the next request on the same connection is served."""
    own = ("Host", authority(server.admin_url))
    first = request_bytes("POST", "/_admin/reset", [own, ("X-Restproof-Admin", "1"),
                                                    ("Content-Type", "application/json"), ("Content-Length", "4")])
    second = request_bytes("GET", "/_admin/health", [own, ("Connection", "close")])
    answer = exchange(server.admin_url, first + b"{}  " + second, until_closed=True)
    assert answer.raw.count(b"HTTP/1.1 200") == 2, answer.raw[:600]


@pytest.mark.parametrize("option", ["--header-timeout", "--body-idle-timeout", "--body-timeout"])
@pytest.mark.parametrize("value", ["0", "-1", "nan", "1e9", "x"])
def test_bounds_out_of_range_exit_2(tmp_path: Path, option: str, value: str) -> None:
    result = subprocess.run([str(MOCK_RECEIVER_BIN), "serve", "--port", "0", "--behaviour",
                             str(RECEIVERS / "dataset-jobs.yaml"), "--state-dir", str(tmp_path), option, value],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
