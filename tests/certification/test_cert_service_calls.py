"""The harness's calls to its own services (the receiver's admin API): a service that stops
answering is ``ServiceUnavailable`` (``certify`` exit 3 with the call named), never an internal error
(exit 1); a refused connection is retried first, since nothing was sent on it."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from certification.services import CONNECT_RETRIES, Proxy, Receiver, ServiceUnavailable, service_client

_IDLE_BODY = b'{"data_requests_in_flight": 0}'
_IDLE_RECEIVER_ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(_IDLE_BODY)).encode() + b"\r\n\r\n" + _IDLE_BODY)
"""A receiver's answer to GET /_admin/stats with no data request in flight."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _receiver(port: int) -> Receiver:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    url = f"http://127.0.0.1:{port}"
    return Receiver(process, url, url, service_client())


@pytest.mark.parametrize("call", [
    lambda r: r.reset(), lambda r: r.advance_clock(5), lambda r: r.put_behaviour({}), lambda r: r.cancel_job("j"),
    lambda r: r.effects(), lambda r: r.in_flight(),
], ids=["reset", "advance_clock", "put_behaviour", "cancel_job", "effects", "in_flight"])
def test_a_receiver_that_refuses_connections_is_unavailable_not_an_internal_error(call: object) -> None:
    receiver = _receiver(_free_port())  # nothing listens there
    with pytest.raises(ServiceUnavailable, match=r"receiver unreachable .*ConnectError"):
        call(receiver)  # type: ignore[operator]


@contextmanager
def _listener_from(port: int, delay_s: float) -> Iterator[list[bytes]]:
    """Nothing listens on ``port`` for ``delay_s`` (connections are refused), then one request is
    answered: the receiver reports no data request in flight."""
    seen: list[bytes] = []
    ready = threading.Event()

    def serve() -> None:
        time.sleep(delay_s)
        with socket.create_server(("127.0.0.1", port)) as server:
            ready.set()
            server.settimeout(10)
            conn, _ = server.accept()
            with conn:
                seen.append(conn.recv(65536))
                conn.sendall(_IDLE_RECEIVER_ANSWER)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield seen
    thread.join(timeout=15)


def test_a_call_refused_while_the_service_comes_up_is_retried_and_answered() -> None:
    port = _free_port()
    with _listener_from(port, delay_s=0.2) as seen:
        assert _receiver(port).in_flight() == 0
    assert len(seen) == 1 and seen[0].startswith(b"GET /_admin/stats")
    assert CONNECT_RETRIES >= 1


def test_settle_polls_less_often_the_longer_it_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    receiver = _receiver(_free_port())
    answers = iter([3] * 8 + [0])
    pauses: list[float] = []
    monkeypatch.setattr(Receiver, "in_flight", lambda self: next(answers))
    monkeypatch.setattr("certification.services.time.sleep", pauses.append)
    assert receiver.settle(60.0, poll_s=0.05, max_poll_s=1.0) == 0
    assert pauses == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]


def test_settle_gives_up_at_its_deadline_with_the_count_still_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    receiver = _receiver(_free_port())
    monkeypatch.setattr(Receiver, "in_flight", lambda self: 2)
    assert receiver.settle(0.3, poll_s=0.05) == 2


def _proxy_with_pages(pages: list[dict[str, object]]) -> tuple[Proxy, list[str]]:
    asked: list[str] = []
    answers = iter(pages)
    proxy = Proxy(subprocess.Popen([sys.executable, "-c", "pass"]), "http://127.0.0.1:1", "http://127.0.0.1:1",
                  service_client())

    def call(method: str, path: str, body: object = None) -> object:
        asked.append(path)
        return next(answers)

    proxy._call = call  # type: ignore[method-assign]
    return proxy, asked


def test_the_proxy_log_is_read_in_one_call_when_its_page_reaches_next_seq() -> None:
    proxy, asked = _proxy_with_pages([{"entries": [{"seq": 4}, {"seq": 5}], "next_seq": 6, "dropped": 1}])
    assert proxy.log_with_gaps() == ([{"seq": 4}, {"seq": 5}], 1)
    assert asked == ["/log?since=0"]


def test_a_proxy_log_page_that_stops_short_is_followed_from_its_last_entry() -> None:
    proxy, asked = _proxy_with_pages([{"entries": [{"seq": 1}], "next_seq": 4, "dropped": 0},
                                      {"entries": [{"seq": 2}, {"seq": 3}], "next_seq": 4, "dropped": 0}])
    assert proxy.log_with_gaps() == ([{"seq": 1}, {"seq": 2}, {"seq": 3}], 0)
    assert asked == ["/log?since=0", "/log?since=1"]


@contextmanager
def _closes_its_idle_connection(answers: int) -> Iterator[tuple[int, list[bytes]]]:
    """Each connection gets one keep-alive answer; the next request on it is read and the connection
    closed without an answer (a server's keep-alive close racing the client's reuse)."""
    seen: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)

    def serve() -> None:
        with server:
            for number in range(answers):
                conn, _ = server.accept()
                with conn:
                    seen.append(conn.recv(65536))
                    conn.sendall(_IDLE_RECEIVER_ANSWER)
                    if number == 0:
                        seen.append(conn.recv(65536))  # the reuse: read, then closed unanswered

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1]), seen
    thread.join(timeout=15)


def test_a_read_whose_reused_connection_closes_unanswered_is_sent_again_on_a_new_one() -> None:
    with _closes_its_idle_connection(answers=2) as (port, seen):
        receiver = _receiver(port)
        assert receiver.in_flight() == 0
        assert receiver.in_flight() == 0  # first on the reused connection (closed), then on a new one
    assert [bytes(s[:16]) for s in seen] == [b"GET /_admin/stat"] * 3


def test_a_state_changing_call_whose_connection_closes_unanswered_is_not_repeated() -> None:
    with _closes_its_idle_connection(answers=1) as (port, seen):
        receiver = _receiver(port)
        assert receiver.in_flight() == 0
        closed = r"receiver unreachable \(POST /_admin/reset\): (RemoteProtocolError|ReadError)"  # a close or a reset
        with pytest.raises(ServiceUnavailable, match=closed):
            receiver.reset()
    assert len(seen) == 2 and seen[1].startswith(b"POST ")
