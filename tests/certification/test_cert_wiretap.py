"""The wire tap on real sockets (127.0.0.1): it relays both ways byte for byte, passes a half-close on
as a half-close and a reset (SO_LINGER 0) on either side as a reset, adds the marker header exactly
once and only to the requests its marker selects (decided on the head, or held until the body
decides), and records the sink's own bytes, never the marked ones."""

from __future__ import annotations

import os
import socket
import struct
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from certification import faults, wiretap
from certification.faults import ConnectTimeoutFault, FaultContext
from certification.http_framing import RawRequest
from certification.scenarios import Fault
from certification.sinks import Invocation, Launched
from certification.wiretap import MARKER_HEADER, WireTap

TIMEOUT = 10.0
MARK = MARKER_HEADER + b": 1\r\n"


@contextmanager
def upstream_server() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(TIMEOUT)
    with closing(server):
        yield server


@contextmanager
def tapped(server: socket.socket, marker=None) -> Iterator[WireTap]:
    tap = WireTap(server.getsockname()[:2])
    tap.start()
    tap.reset(marker)
    try:
        yield tap
    finally:
        tap.stop()


def connect(tap: WireTap) -> socket.socket:
    client = socket.create_connection(tap.addresses[0], timeout=TIMEOUT)
    return client


def accept(server: socket.socket) -> socket.socket:
    peer, _ = server.accept()
    peer.settimeout(TIMEOUT)
    return peer


def read_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            break
        data += chunk
    return data


def read_to_eof(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def reset(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def request(target: str, body: bytes = b"", headers: bytes = b"") -> bytes:
    return (f"POST {target} HTTP/1.1\r\nHost: r\r\n".encode() + headers
            + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)


# --- relaying ------------------------------------------------------------------------------------------------


def test_bytes_are_relayed_both_ways_unchanged() -> None:
    payload = bytes(range(256)) * 1024  # not HTTP at all: the tap relays, it does not judge
    with upstream_server() as server, tapped(server) as tap, closing(connect(tap)) as client:
        client.sendall(payload)
        with closing(accept(server)) as peer:
            assert read_exactly(peer, len(payload)) == payload
            peer.sendall(payload[::-1])
            assert read_exactly(client, len(payload)) == payload[::-1]
            (record,) = tap.connections()
            assert record.total_bytes == len(payload)
            assert record.upstream_local == "{}:{}".format(*peer.getpeername()[:2])
            assert record.client == "{}:{}".format(*client.getsockname()[:2])


def test_a_client_half_close_passes_on_and_the_answer_still_comes_back() -> None:
    with upstream_server() as server, tapped(server) as tap, closing(connect(tap)) as client:
        client.sendall(request("/x"))
        client.shutdown(socket.SHUT_WR)
        with closing(accept(server)) as peer:
            assert read_to_eof(peer) == request("/x")  # the half-close arrived as EOF
            peer.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            peer.shutdown(socket.SHUT_WR)
            assert read_to_eof(client) == b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        wait_for(lambda: tap.connections()[0].closed_at is not None, "the relay to end")


def test_an_upstream_half_close_passes_on_and_the_client_may_still_send() -> None:
    with upstream_server() as server, tapped(server) as tap, closing(connect(tap)) as client:
        client.sendall(b"first")
        with closing(accept(server)) as peer:
            assert read_exactly(peer, 5) == b"first"
            peer.sendall(b"bye")
            peer.shutdown(socket.SHUT_WR)
            assert read_to_eof(client) == b"bye"
            client.sendall(b"after")
            assert read_exactly(peer, 5) == b"after"


def test_an_upstream_reset_reaches_the_client_as_a_reset() -> None:
    with upstream_server() as server, tapped(server) as tap, closing(connect(tap)) as client:
        client.sendall(request("/x"))
        peer = accept(server)
        read_exactly(peer, len(request("/x")))
        reset(peer)
        with pytest.raises(ConnectionResetError):
            client.recv(1)


def test_a_client_reset_reaches_the_upstream_as_a_reset() -> None:
    with upstream_server() as server, tapped(server) as tap:
        client = connect(tap)
        client.sendall(b"x")
        with closing(accept(server)) as peer:
            assert read_exactly(peer, 1) == b"x"
            reset(client)
            with pytest.raises(ConnectionResetError):
                peer.recv(1)


def test_an_upstream_that_refuses_the_connection_resets_the_client() -> None:
    with upstream_server() as server:
        address = server.getsockname()[:2]
    tap = WireTap(address)
    tap.start()
    try:
        # The tap could not reach its upstream: a reset, as a refused connect would be (on loopback it
        # may even beat connect() returning).
        with pytest.raises(ConnectionResetError), closing(connect(tap)) as client:
            client.recv(1)
    finally:
        tap.stop()


def test_reset_forgets_the_recorded_connections() -> None:
    with upstream_server() as server, tapped(server) as tap, closing(connect(tap)) as client:
        client.sendall(b"x")
        with closing(accept(server)) as peer:
            read_exactly(peer, 1)
            assert len(tap.connections()) == 1
            tap.reset()
            assert tap.connections() == [] and tap.marker is None


# --- recording -----------------------------------------------------------------------------------------------


def test_every_request_is_recorded_as_the_client_sent_it_with_arrival_times() -> None:
    first, second = request("/a", b"hello"), request("/b", b"world!")
    with upstream_server() as server, tapped(server) as tap, closing(connect(tap)) as client:
        before = time.time()
        client.sendall(first)
        with closing(accept(server)) as peer:
            read_exactly(peer, len(first))
            client.sendall(second[:10])
            read_exactly(peer, 10)
            client.sendall(second[10:])
            read_exactly(peer, len(second) - 10)
            (record,) = tap.connections()
            requests = record.framer.requests
            assert [(r.target, bytes(r.body)) for r in requests] == [("/a", b"hello"), ("/b", b"world!")]
            assert [offset for offset, _ in record.arrivals] == [0, len(first), len(first) + 10]
            assert before <= record.time_at(0) <= record.time_at(len(first)) <= record.time_at(len(first) + 15)
            assert record.time_at(len(first) + 9) == record.arrivals[1][1]


# --- marking -------------------------------------------------------------------------------------------------


def by_target(request: RawRequest) -> bool | None:
    return request.target.startswith("/select")


def test_the_marker_header_is_added_once_to_the_selected_request_only() -> None:
    plain, chosen, later = request("/plain", b"1"), request("/select", b"22"), request("/also", b"333")
    with upstream_server() as server, tapped(server, by_target) as tap, closing(connect(tap)) as client:
        client.sendall(plain + chosen + later)
        with closing(accept(server)) as peer:
            expected = plain + chosen.replace(b"\r\n\r\n", b"\r\n" + MARK + b"\r\n", 1) + later
            assert read_exactly(peer, len(expected)) == expected
            (record,) = tap.connections()
            assert record.marked == {1}
            assert [r.head for r in record.framer.requests] == [r.split(b"\r\n\r\n")[0] for r in (plain, chosen, later)]
            assert MARKER_HEADER not in b"".join(r.head for r in record.framer.requests)


def test_a_head_without_header_fields_gets_the_marker_after_its_request_line() -> None:
    bare = b"POST /select HTTP/1.1\r\n\r\n"
    with upstream_server() as server, tapped(server, by_target) as tap, closing(connect(tap)) as client:
        client.sendall(bare)
        with closing(accept(server)) as peer:
            expected = b"POST /select HTTP/1.1\r\n" + MARK + b"\r\n"
            assert read_exactly(peer, len(expected)) == expected


def test_a_partial_head_is_held_until_the_marker_can_decide() -> None:
    chosen = request("/select", b"body")
    with upstream_server() as server, tapped(server, by_target) as tap, closing(connect(tap)) as client:
        client.sendall(chosen[:12])
        with closing(accept(server)) as peer:
            peer.settimeout(0.3)
            with pytest.raises(TimeoutError):
                peer.recv(1)  # nothing of the request before its head is whole
            peer.settimeout(TIMEOUT)
            client.sendall(chosen[12:])
            expected = chosen.replace(b"\r\n\r\n", b"\r\n" + MARK + b"\r\n", 1)
            assert read_exactly(peer, len(expected)) == expected


def test_without_a_marker_nothing_is_held() -> None:
    chosen = request("/select", b"body")
    with upstream_server() as server, tapped(server) as tap, closing(connect(tap)) as client:
        client.sendall(chosen[:12])
        with closing(accept(server)) as peer:
            assert read_exactly(peer, 12) == chosen[:12]


def by_body(request: RawRequest) -> bool | None:
    if not request.body_complete:
        return None
    return b"target-day" in request.body


@pytest.mark.parametrize(("body", "selected"), [(b"rows of target-day", True), (b"rows of another day", False)])
def test_a_body_scoped_decision_holds_the_request_until_its_body_is_whole(body: bytes, selected: bool) -> None:
    data = request("/events", body)
    head_length = data.index(b"\r\n\r\n") + 4
    with upstream_server() as server, tapped(server, by_body) as tap, closing(connect(tap)) as client:
        client.sendall(data[:head_length + 3])
        with closing(accept(server)) as peer:
            peer.settimeout(0.3)
            with pytest.raises(TimeoutError):
                peer.recv(1)  # held: the head may not leave before the body decides
            peer.settimeout(TIMEOUT)
            client.sendall(data[head_length + 3:] + request("/next"))
            expected = (data.replace(b"\r\n\r\n", b"\r\n" + MARK + b"\r\n", 1) if selected else data) + request("/next")
            assert read_exactly(peer, len(expected)) == expected
            assert tap.connections()[0].marked == ({0} if selected else set())
            assert bytes(tap.connections()[0].framer.requests[0].body) == body


def test_an_undecided_body_over_the_hold_limit_goes_on_unmarked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wiretap, "MAX_HELD_BODY", 4)
    data = request("/events", b"0123456789")
    with upstream_server() as server, tapped(server, lambda _: None) as tap, closing(connect(tap)) as client:
        client.sendall(data[:-4])
        with closing(accept(server)) as peer:
            assert read_exactly(peer, len(data) - 4) == data[:-4]
            client.sendall(data[-4:])
            assert read_exactly(peer, 4) == data[-4:]
            assert tap.connections()[0].marked == set()


def test_a_held_request_the_client_abandons_still_goes_on_as_sent() -> None:
    data = request("/events", b"0123456789")
    with upstream_server() as server, tapped(server, by_body) as tap, closing(connect(tap)) as client:
        client.sendall(data[:-3])
        client.shutdown(socket.SHUT_WR)
        with closing(accept(server)) as peer:
            assert read_to_eof(peer) == data[:-3]


def test_bytes_the_framer_cannot_follow_are_relayed_unmarked() -> None:
    garbage = b"NOT HTTP AT ALL\r\n\r\n" + request("/select")
    with upstream_server() as server, tapped(server, by_target) as tap, closing(connect(tap)) as client:
        client.sendall(garbage)
        with closing(accept(server)) as peer:
            assert read_exactly(peer, len(garbage)) == garbage
            assert tap.connections()[0].framer.failed and tap.connections()[0].marked == set()


def test_each_connection_is_marked_on_its_own() -> None:
    with upstream_server() as server, tapped(server, by_target) as tap:
        with closing(connect(tap)) as one, closing(accept_after(server, one, request("/other"))) as peer_one:
            assert read_exactly(peer_one, len(request("/other"))) == request("/other")
        with closing(connect(tap)) as two, closing(accept_after(server, two, request("/select"))) as peer_two:
            expected = request("/select").replace(b"\r\n\r\n", b"\r\n" + MARK + b"\r\n", 1)
            assert read_exactly(peer_two, len(expected)) == expected
        assert [record.marked for record in tap.connections()] == [set(), {0}]


def accept_after(server: socket.socket, client: socket.socket, data: bytes) -> socket.socket:
    client.sendall(data)
    return accept(server)


# --- stalling ------------------------------------------------------------------------------------------------


def test_a_stalled_tap_lets_connects_hang_until_it_resumes() -> None:
    with upstream_server() as server, tapped(server) as tap:
        assert not tap.connect_hanging()
        tap.stall()
        try:
            pending = socket.socket()
            pending.setblocking(False)
            assert pending.connect_ex(tap.addresses[0]) != 0  # in progress: its SYN is dropped
            wait_for(tap.connect_hanging, "a connect waiting in SYN_SENT")
            with pytest.raises(TimeoutError):
                socket.create_connection(tap.addresses[0], timeout=0.5)
            pending.close()
        finally:
            tap.resume()
        with closing(connect(tap)) as client:
            client.sendall(b"x")
            with closing(accept(server)) as peer:
                assert read_exactly(peer, 1) == b"x"
        assert len(tap.connections()) == 1  # the stall's fillers are never recorded as connections


def test_when_the_sink_left_a_connection_is_recorded() -> None:
    with upstream_server() as server, tapped(server) as tap, closing(connect(tap)) as client:
        client.sendall(b"x")
        with closing(accept(server)) as peer:
            read_exactly(peer, 1)
            assert tap.connections()[0].client_left_at is None
            client.shutdown(socket.SHUT_WR)
            wait_for(lambda: tap.connections()[0].client_left_at is not None, "the sink's EOF")
            assert tap.connections()[0].closed_at is None  # the proxy's side is still open


def test_a_connect_partition_ends_after_its_longest_span_while_the_first_run_lives(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(faults, "STALL_MAX_S", 1.0)
    with upstream_server() as server, tapped(server) as tap:
        fault = ConnectTimeoutFault(Fault(type="connect_timeout"))
        ctx = FaultContext(row=None, proxy=None, receiver=None, seed=0, tap=tap)  # type: ignore[arg-type]
        first = Launched(Invocation((sys.executable, "-c", "import time; time.sleep(30)"), tmp_path, dict(os.environ)))
        try:
            fault.arm(ctx, first)
            first.go()
            fault.during_first_run(ctx, first)
            with pytest.raises(OSError):  # partitioned: the SYN is dropped
                socket.create_connection(tap.addresses[0], timeout=0.5).close()
            time.sleep(1.5)  # the first run lives on, the partition has ended
            with closing(socket.create_connection(tap.addresses[0], timeout=TIMEOUT)):
                pass
        finally:
            first.kill()
            first.wait(10)
        assert fault.evidence(ctx, [], []).fired is True  # the hanging connect was seen


def test_after_a_stall_a_connection_from_a_fillers_port_is_relayed_and_recorded() -> None:
    with upstream_server() as server, tapped(server) as tap:
        tap.stall()
        ports = [filler.getsockname()[1] for filler in tap._fillers]
        tap.resume()
        wait_for(lambda: not tap._filler_ports, "every filler accepted, or forgotten if never established")
        for port in ports[:3]:  # the kernel may hand any of them to the next sink: bind to it on purpose
            client = socket.socket()
            client.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                client.bind(("127.0.0.1", port))
            except OSError:
                client.close()
                continue
            with closing(client):
                client.connect(tap.addresses[0])
                client.sendall(b"y")
                with closing(accept(server)) as peer:
                    assert read_exactly(peer, 1) == b"y"
        assert len(tap.connections()) >= 1 and all(record.total_bytes == 1 for record in tap.connections())
