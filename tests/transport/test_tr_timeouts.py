"""Each bound of the timeout vector classifies as its own failure, provoked by a real delay or a
real stalled peer (fault proxy, byte-level TCP proxy, a listener that never accepts or never
reads), and DNS through an injected resolver with the real one for the happy path."""

# ruff: noqa: F811  # fixtures imported from tr_fixtures are redefined as test parameters

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from toxiproxy import Toxiproxy
from tr_fixtures import fresh_proxy, proxy, receiver  # noqa: F401  # pytest fixtures
from tr_sockets import full_backlog_listener
from tr_support import BATCHES, BytesBody, FaultProxy, GeneratedBody, ServerProcess, batch_request, rows_json, timeouts

from fault_proxy.tcp import start_toxiproxy
from sink.contracts.transport import FailureKind, SendCertainty, TransportPhase
from sink.transport import HttpxRestTransport, NoAuth

pytestmark = pytest.mark.timeout(90)
Listener = tuple[socket.socket, list[socket.socket]]

TIGHT = {"dns_ms": 500, "connect_ms": 500, "tls_ms": 500, "write_ms": 800, "read_ms": 800, "idle_ms": 800,
         "request_total_ms": 1000}


def _send(authority: str, body: object, **bounds: int) -> object:
    with HttpxRestTransport(authority, NoAuth()) as transport:
        return transport.send(batch_request(f"k-{uuid.uuid4().hex}", body), timeouts=timeouts(**bounds))


@pytest.fixture
def silent_listener() -> Iterator[Listener]:
    """Accepts connections and never reads or writes a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            accepted.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server, accepted
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_dns_timeout_and_error_are_distinct_and_not_started() -> None:
    def slow(host: str, port: int) -> str:
        time.sleep(1.0)
        return "127.0.0.1"

    def failing(host: str, port: int) -> str:
        raise socket.gaierror(socket.EAI_NONAME, "unknown name")

    for resolver, kind in ((slow, FailureKind.DNS_TIMEOUT), (failing, FailureKind.DNS_ERROR)):
        with HttpxRestTransport("http://receiver.invalid:8080", NoAuth(), resolver=resolver) as transport:
            started = time.monotonic()
            outcome = transport.send(batch_request("k", rows_json("d")), timeouts=timeouts(dns_ms=200))
            assert time.monotonic() - started < 0.9
        assert outcome.evidence.failure is kind
        assert outcome.evidence.certainty is SendCertainty.NOT_STARTED
        assert outcome.evidence.last_phase_started is TransportPhase.DNS


def test_a_host_name_is_resolved_once_and_the_address_is_recorded(receiver: ServerProcess) -> None:
    port = receiver.data_url.rsplit(":", 1)[1]
    calls: list[str] = []

    def counting(host: str, port: int) -> str:
        calls.append(host)
        return str(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][0])

    with HttpxRestTransport(f"http://localhost:{port}", NoAuth(), resolver=counting) as transport:
        first = transport.send(batch_request(f"k-{uuid.uuid4().hex}", rows_json("n")), timeouts=timeouts())
        second = transport.send(batch_request(f"k-{uuid.uuid4().hex}", rows_json("m")), timeouts=timeouts())
    assert first.response is not None and second.response is not None
    assert first.evidence.resolved_address in ("127.0.0.1", "::1")
    assert second.evidence.resolved_address == first.evidence.resolved_address
    assert calls == ["localhost"]


def test_connect_timeout_when_the_listen_backlog_is_full() -> None:
    with full_backlog_listener() as server:
        outcome = _send(f"http://127.0.0.1:{server.getsockname()[1]}", rows_json("c"), connect_ms=300)
    assert outcome.evidence.failure is FailureKind.CONNECT_TIMEOUT  # type: ignore[attr-defined]
    assert outcome.evidence.certainty is SendCertainty.NOT_STARTED  # type: ignore[attr-defined]


def test_tls_error_against_a_plain_http_receiver(receiver: ServerProcess) -> None:
    outcome = _send(receiver.data_url.replace("http://", "https://"), rows_json("t"))
    assert outcome.evidence.failure is FailureKind.TLS_ERROR  # type: ignore[attr-defined]
    assert outcome.evidence.certainty is SendCertainty.NOT_STARTED  # type: ignore[attr-defined]
    assert outcome.evidence.last_phase_started is TransportPhase.TLS  # type: ignore[attr-defined]


def test_tls_timeout_when_the_peer_never_answers_the_handshake(silent_listener: Listener) -> None:
    port = silent_listener[0].getsockname()[1]
    outcome = _send(f"https://127.0.0.1:{port}", rows_json("t"), tls_ms=300)
    assert outcome.evidence.failure is FailureKind.TLS_TIMEOUT  # type: ignore[attr-defined]
    assert outcome.evidence.certainty is SendCertainty.NOT_STARTED  # type: ignore[attr-defined]
    assert outcome.evidence.request_bytes_to_kernel == 0  # type: ignore[attr-defined]


def test_write_timeout_when_the_peer_stops_reading(silent_listener: Listener) -> None:
    port = silent_listener[0].getsockname()[1]
    outcome = _send(f"http://127.0.0.1:{port}", GeneratedBody(64 << 20), write_ms=300)
    evidence = outcome.evidence  # type: ignore[attr-defined]
    assert evidence.failure is FailureKind.WRITE_TIMEOUT
    assert evidence.certainty is SendCertainty.MAY_HAVE_REACHED_PEER
    assert evidence.last_phase_started is TransportPhase.REQUEST_BODY
    assert 0 < evidence.request_bytes_to_kernel < 64 << 20


def test_read_timeout_while_waiting_for_the_response(fresh_proxy: FaultProxy) -> None:
    fresh_proxy.control.add_rule({"match": {"path": BATCHES}, "fault": {"action": "delay", "phase": "request",
                                                                          "seconds": 2}})
    outcome = _send(fresh_proxy.url, rows_json("r"), read_ms=300)
    evidence = outcome.evidence  # type: ignore[attr-defined]
    assert evidence.failure is FailureKind.READ_TIMEOUT
    assert evidence.certainty is SendCertainty.MAY_HAVE_REACHED_PEER
    assert evidence.last_phase_started is TransportPhase.RESPONSE_HEADERS


def test_request_total_timeout_when_no_single_phase_bound_expires(fresh_proxy: FaultProxy) -> None:
    # A slow body (0.6 s) then a slow answer: each phase stays inside its own bound, the sum does not.
    fresh_proxy.control.add_rule({"match": {"path": BATCHES}, "fault": {"action": "delay", "phase": "request",
                                                                          "seconds": 2}})
    slow = BytesBody(rows_json("slow", 40), chunk=256, delay_s=0.05)
    started = time.monotonic()
    outcome = _send(fresh_proxy.url, slow, **TIGHT)
    assert time.monotonic() - started < 1.5
    evidence = outcome.evidence  # type: ignore[attr-defined]
    assert evidence.failure is FailureKind.REQUEST_TOTAL_TIMEOUT
    assert evidence.certainty is SendCertainty.MAY_HAVE_REACHED_PEER


@pytest.fixture(scope="module")
def toxi() -> Iterator[Toxiproxy]:
    handle = start_toxiproxy("builtin", seed=1, in_thread=True)
    client = Toxiproxy()
    client.update_api_consumer(handle.host, handle.port)
    yield client
    client.destroy_all()
    handle.stop()


def _tcp_proxy(toxi: Toxiproxy, receiver: ServerProcess) -> object:
    toxi.destroy_all()
    return toxi.create(upstream=receiver.data_url.removeprefix("http://"), name=f"rcv{uuid.uuid4().hex[:8]}",
                       listen="127.0.0.1:0")


def test_idle_timeout_between_response_chunks(receiver: ServerProcess, toxi: Toxiproxy) -> None:
    proxy = _tcp_proxy(toxi, receiver)
    proxy.add_toxic(type="slicer", stream="downstream",  # type: ignore[attr-defined]
                    attributes={"average_size": 8, "size_variation": 0, "delay": 600_000})
    outcome = _send(f"http://{proxy.listen}", rows_json("i"), idle_ms=200, read_ms=3000,  # type: ignore[attr-defined]
                    request_total_ms=5000)
    evidence = outcome.evidence  # type: ignore[attr-defined]
    assert evidence.failure is FailureKind.IDLE_TIMEOUT
    assert evidence.certainty is SendCertainty.MAY_HAVE_REACHED_PEER
    assert 0 < evidence.response_bytes_received < 64


def test_tcp_reset_after_the_request_is_a_read_error(receiver: ServerProcess, toxi: Toxiproxy) -> None:
    proxy = _tcp_proxy(toxi, receiver)
    proxy.add_toxic(type="reset_peer", stream="upstream", attributes={"timeout": 0})  # type: ignore[attr-defined]
    outcome = _send(f"http://{proxy.listen}", rows_json("x"))  # type: ignore[attr-defined]
    evidence = outcome.evidence  # type: ignore[attr-defined]
    assert evidence.certainty is SendCertainty.MAY_HAVE_REACHED_PEER
    assert evidence.failure in (FailureKind.READ_ERROR, FailureKind.WRITE_ERROR)


def test_pool_timeout_is_not_started(fresh_proxy: FaultProxy) -> None:
    fresh_proxy.control.add_rule({"match": {"path": BATCHES}, "fire": "once",
                                  "fault": {"action": "hold", "phase": "request", "timeout_seconds": 10}})
    with HttpxRestTransport(fresh_proxy.url, NoAuth(), max_connections=1) as transport:
        holder = threading.Thread(target=transport.send, args=(batch_request("k-h", rows_json("h")),),
                                  kwargs={"timeouts": timeouts()})
        holder.start()
        held = fresh_proxy.control.wait_for_held(1)
        short = {name: 400 for name in TIGHT}
        outcome = transport.send(batch_request("k-p", rows_json("p")), timeouts=timeouts(**short))
        fresh_proxy.control.release(held[0]["hold_id"])
        holder.join(10)
    assert outcome.evidence.failure is FailureKind.POOL_TIMEOUT
    assert outcome.evidence.certainty is SendCertainty.NOT_STARTED
    assert outcome.evidence.last_phase_started is TransportPhase.POOL
