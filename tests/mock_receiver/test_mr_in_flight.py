"""The receiver counts the data requests it is still working on (what the judge waits for before it
reads the ledger): the middleware alone, then a real `mock-receiver serve` with an upload held open."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from mr_support import ADMIN_HEADERS, RECEIVERS, ServerProcess

from mock_receiver.in_flight import InFlightMiddleware


@dataclass
class Counter:
    data_requests_in_flight: int = 0


def _scope(path: str, kind: str = "http") -> dict[str, object]:
    return {"type": kind, "path": path, "method": "POST"}


async def _noop_receive() -> dict[str, object]:
    return {"type": "http.request"}


async def _noop_send(_message: object) -> None:
    return None


def test_a_data_request_counts_while_the_application_works_on_it() -> None:
    counter = Counter()
    seen: list[int] = []

    async def app(scope: object, receive: object, send: object) -> None:
        seen.append(counter.data_requests_in_flight)
        await asyncio.sleep(0)

    middleware = InFlightMiddleware(app, counter)  # type: ignore[arg-type]
    asyncio.run(middleware(_scope("/mock/v1/dataset-jobs"), _noop_receive, _noop_send))  # type: ignore[arg-type]
    assert seen == [1]
    assert counter.data_requests_in_flight == 0


def test_a_failing_request_is_no_longer_counted() -> None:
    counter = Counter()

    async def app(scope: object, receive: object, send: object) -> None:
        raise RuntimeError("handler failed")

    middleware = InFlightMiddleware(app, counter)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        asyncio.run(middleware(_scope("/mock/v1/dataset-jobs"), _noop_receive, _noop_send))  # type: ignore[arg-type]
    assert counter.data_requests_in_flight == 0


@pytest.mark.parametrize("scope", [_scope("/_admin/stats"), _scope("/_admin"), _scope("/", kind="lifespan"),
                                   _scope("/", kind="websocket")])
def test_admin_and_non_http_calls_are_not_counted(scope: dict[str, object]) -> None:
    counter = Counter()
    seen: list[int] = []

    async def app(scope: object, receive: object, send: object) -> None:
        seen.append(counter.data_requests_in_flight)

    asyncio.run(InFlightMiddleware(app, counter)(scope, _noop_receive, _noop_send))  # type: ignore[arg-type]
    assert seen == [0]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(RECEIVERS / "json-batches.yaml", tmp_path_factory.mktemp("inflight")).start()
    yield process
    stderr = process.stop()
    assert "Traceback" not in stderr, stderr[-3000:]


def _in_flight(server: ServerProcess) -> int:
    stats = httpx.get(server.admin_url + "/_admin/stats", headers=ADMIN_HEADERS, timeout=10).json()
    return int(stats["data_requests_in_flight"])


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_held_upload_is_in_flight_until_it_ends(server: ServerProcess) -> None:
    release = threading.Event()

    def body() -> Iterator[bytes]:
        yield b"["
        release.wait(30)
        yield b"]"

    def upload() -> None:
        httpx.post(server.data_url + "/mock/v1/resources/measurements/batches", content=body(),
                   params={"range_start": "2026-07-01", "range_end": "2026-07-02"},
                   headers={"content-type": "application/json", "authorization": "Bearer t"}, timeout=60)

    sender = threading.Thread(target=upload)
    sender.start()
    try:
        deadline = time.monotonic() + 20
        while _in_flight(server) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _in_flight(server) == 1
    finally:
        release.set()
        sender.join(60)
    deadline = time.monotonic() + 20
    while _in_flight(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _in_flight(server) == 0


def test_a_path_that_only_starts_like_admin_is_a_data_request() -> None:
    counter = Counter()
    seen: list[int] = []

    async def app(scope: object, receive: object, send: object) -> None:
        seen.append(counter.data_requests_in_flight)

    asyncio.run(InFlightMiddleware(app, counter)(_scope("/_administer"), _noop_receive, _noop_send))  # type: ignore[arg-type]
    assert seen == [1]
