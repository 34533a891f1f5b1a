"""Kill tests of sink/transport/network.py (issue 14): the counting backend connects only to the
address the transport pinned, applies the bound of the phase in flight (or the request deadline),
records what failed and how, and counts what the kernel accepted. Everything runs over socket
pairs or listeners on 127.0.0.1; the TLS peer is a trustme CA's server on a socket pair."""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpcore
import pytest
import trustme

from sink.contracts.profile_policy import TimeoutVector
from sink.transport.exchange import CURRENT, Exchange, IoFailure
from sink.transport.network import CountingBackend, CountingStream
from tests.transport.tr_sockets import full_backlog_listener

pytestmark = pytest.mark.timeout(60)
LONG = 5000


def _exchange(**bounds_ms: int) -> Exchange:
    values = {"dns_ms": LONG, "connect_ms": LONG, "tls_ms": LONG, "write_ms": LONG, "read_ms": LONG,
              "idle_ms": LONG, "request_total_ms": 3 * LONG, "operation_total_ms": 60000}
    values.update(bounds_ms)
    return Exchange(TimeoutVector(**values))


@contextlib.contextmanager
def _current(exchange: Exchange) -> Iterator[Exchange]:
    token = CURRENT.set(exchange)
    try:
        yield exchange
    finally:
        CURRENT.reset(token)


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(2)
    yield server
    server.close()


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _client_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


def _tls_peer(sock: socket.socket, issuer: trustme.CA, reply: bytes = b"") -> threading.Thread:
    """Serve one TLS handshake (certificate for ``localhost``) on ``sock``, then send ``reply``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    issuer.issue_cert("localhost").configure_cert(context)

    def serve() -> None:
        with contextlib.suppress(OSError):
            wrapped = context.wrap_socket(sock, server_side=True)
            wrapped.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def _raises(error: type[Exception], action: Callable[[], Any]) -> None:
    with pytest.raises(error):
        action()


def test_without_an_exchange_the_callers_timeout_applies(pair: tuple[socket.socket, socket.socket],
                                                         listener: socket.socket, ca: trustme.CA) -> None:
    left, right = pair
    stream = CountingStream(left)
    stream.write(b"ping")
    assert right.recv(4) == b"ping"
    right.sendall(b"pong")
    assert stream.read(4) == b"pong"
    _raises(httpcore.ReadTimeout, lambda: stream.read(4, timeout=0.05))
    tcp = CountingBackend({"receiver.test": "127.0.0.1"}).connect_tcp("receiver.test", listener.getsockname()[1])
    tcp.close()
    left_tls, right_tls = socket.socketpair()
    _tls_peer(right_tls, ca, b"ok")
    wrapped = CountingStream(left_tls).start_tls(_client_context(ca), "localhost")
    assert wrapped.read(2) == b"ok"
    wrapped.close()
    right_tls.close()


def test_an_expired_request_deadline_is_a_total_timeout_of_every_phase(ca: trustme.CA) -> None:
    cases: list[tuple[str, type[Exception], Callable[[socket.socket], Any]]] = [
        ("connect", httpcore.ConnectTimeout, lambda s: CountingBackend({"h": "127.0.0.1"}).connect_tcp("h", 9)),
        ("read", httpcore.ReadTimeout, lambda s: CountingStream(s).read(10)),
        ("write", httpcore.WriteTimeout, lambda s: CountingStream(s).write(b"x")),
        ("tls", httpcore.ConnectTimeout, lambda s: CountingStream(s).start_tls(_client_context(ca), "localhost")),
    ]
    for operation, error, call in cases:
        left, right = socket.socketpair()
        exchange = _exchange()
        exchange.started = time.monotonic() - 3 * LONG / 1000
        try:
            with _current(exchange), pytest.raises(error):
                call(left)
            assert exchange.failure == IoFailure(operation, "timeout", "total"), operation  # type: ignore[arg-type]
            assert exchange.bytes_sent == 0
            if operation == "tls":
                assert left.fileno() == -1  # the half-open socket is not left to the pool
        finally:
            left.close()
            right.close()


def test_bounds_under_one_second_are_bounds_not_an_expired_deadline(listener: socket.socket,
                                                                    ca: trustme.CA) -> None:
    short = {"connect_ms": 500, "tls_ms": 500, "write_ms": 500, "read_ms": 500, "idle_ms": 500}
    with _current(_exchange(**short)) as exchange:
        stream = CountingBackend({"h": "127.0.0.1"}).connect_tcp("h", listener.getsockname()[1])
        accepted, _ = listener.accept()
        try:
            stream.write(b"abc")
            assert accepted.recv(3) == b"abc"
            accepted.sendall(b"de")
            assert stream.read(2) == b"de"
        finally:
            stream.close()
            accepted.close()
        left, right = socket.socketpair()
        _tls_peer(right, ca, b"f")
        wrapped = CountingStream(left).start_tls(_client_context(ca), "localhost", timeout=0.5)
        assert wrapped.read(1) == b"f"
        wrapped.close()
        right.close()
    assert exchange.failure is None
    assert (exchange.bytes_sent, exchange.bytes_received) == (3, 3)


def test_the_first_byte_waits_the_read_bound_and_later_ones_the_idle_bound(
        pair: tuple[socket.socket, socket.socket]) -> None:
    left, right = pair
    stream = CountingStream(left)
    with _current(_exchange(read_ms=150, idle_ms=LONG)) as first:
        started = time.monotonic()
        _raises(httpcore.ReadTimeout, lambda: stream.read(10))
        assert 0.1 <= time.monotonic() - started < 2.0
    assert first.failure == IoFailure("read", "timeout", "read")
    with _current(_exchange(read_ms=LONG, idle_ms=150)) as later:
        right.sendall(b"x")
        assert stream.read(10) == b"x"
        _raises(httpcore.ReadTimeout, lambda: stream.read(10))
    assert later.failure == IoFailure("read", "timeout", "idle") and later.bytes_received == 1


def test_a_write_the_peer_never_drains_times_out_with_what_the_kernel_took_counted(
        pair: tuple[socket.socket, socket.socket]) -> None:
    left, right = pair
    left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    with _current(_exchange(write_ms=150)) as exchange:
        _raises(httpcore.WriteTimeout, lambda: CountingStream(left).write(b"w" * (8 << 20)))
    assert exchange.failure == IoFailure("write", "timeout", "write")
    right.setblocking(False)
    drained = 0
    with contextlib.suppress(BlockingIOError):
        while chunk := right.recv(1 << 16):
            drained += len(chunk)
    assert 0 < exchange.bytes_sent < 8 << 20
    assert drained == exchange.bytes_sent


def test_io_on_a_broken_socket_is_an_error_of_that_operation(ca: trustme.CA) -> None:
    cases: list[tuple[str, type[Exception], Callable[[socket.socket], Any]]] = [
        ("read", httpcore.ReadError, lambda s: CountingStream(s).read(10)),
        ("write", httpcore.WriteError, lambda s: CountingStream(s).write(b"x")),
        ("tls", httpcore.ConnectError, lambda s: CountingStream(s).start_tls(_client_context(ca), "localhost")),
    ]
    for operation, error, call in cases:
        left, right = socket.socketpair()
        left.close()
        with _current(_exchange()) as exchange, pytest.raises(error):
            call(left)
        right.close()
        assert exchange.failure == IoFailure(operation, "error"), operation  # type: ignore[arg-type]


def test_tls_verifies_the_authority_name_and_bounds_the_handshake(ca: trustme.CA) -> None:
    for name, issuer in (("elsewhere.test", ca), ("localhost", trustme.CA())):
        left, right = socket.socketpair()
        _tls_peer(right, issuer)
        with _current(_exchange()) as exchange, pytest.raises(httpcore.ConnectError):
            CountingStream(left).start_tls(_client_context(ca), name)
        assert exchange.failure == IoFailure("tls", "error"), name
        left.close()
        right.close()
    left, right = socket.socketpair()  # a peer that never answers the ClientHello
    with _current(_exchange(tls_ms=150)) as exchange:
        _raises(httpcore.ConnectTimeout, lambda: CountingStream(left).start_tls(_client_context(ca), "localhost"))
    assert exchange.failure == IoFailure("tls", "timeout", "tls")
    left.close()
    right.close()


def test_extra_info_answers_what_httpcore_asks(listener: socket.socket, ca: trustme.CA) -> None:
    port = listener.getsockname()[1]
    stream = CountingBackend({"h": "127.0.0.1"}).connect_tcp("h", port)
    accepted, peer = listener.accept()
    try:
        sock = stream.get_extra_info("socket")
        assert isinstance(sock, socket.socket)
        assert stream.get_extra_info("client_addr") == sock.getsockname() == peer
        assert stream.get_extra_info("server_addr") == ("127.0.0.1", port)
        assert stream.get_extra_info("ssl_object") is None  # plain TCP: httpcore negotiates no ALPN
        assert stream.get_extra_info("anything else") is None
        started = time.monotonic()
        assert stream.get_extra_info("is_readable") is False  # an idle keep-alive connection stays usable
        assert time.monotonic() - started < 0.5  # the pool's probe never waits
        accepted.sendall(b"!")
        time.sleep(0.05)
        assert stream.get_extra_info("is_readable") is True
    finally:
        stream.close()
        accepted.close()
    assert stream.get_extra_info("is_readable") is True  # closed: never reused
    left, right = socket.socketpair()
    _tls_peer(right, ca)
    wrapped = CountingStream(left).start_tls(_client_context(ca), "localhost")
    try:
        assert wrapped.get_extra_info("ssl_object").version().startswith("TLS")
        # Only the ssl_object question gets the TLS object; the others still describe the socket.
        assert wrapped.get_extra_info("client_addr") == wrapped.get_extra_info("socket").getsockname()
    finally:
        wrapped.close()
        right.close()


def test_only_a_pinned_host_is_connected_to(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    with _current(_exchange()) as exchange:
        _raises(httpcore.ConnectError, lambda: CountingBackend().connect_tcp("localhost", port))
    assert exchange.failure == IoFailure("connect", "error")
    listener.settimeout(0.2)
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing reached the listener, although it was there to be found
    backend = CountingBackend({"receiver.test": "127.0.0.1"})
    backend.pin("later.test", "127.0.0.1")
    for host in ("receiver.test", "later.test"):
        with _current(_exchange()) as exchange:
            backend.connect_tcp(host, port).close()
        assert exchange.failure is None
        listener.accept()[0].close()


def test_connect_failures_are_told_apart(listener: socket.socket) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    refused_port = closed.getsockname()[1]
    closed.close()
    with _current(_exchange()) as exchange:
        _raises(httpcore.ConnectError, lambda: CountingBackend({"h": "127.0.0.1"}).connect_tcp("h", refused_port))
    assert exchange.failure == IoFailure("connect", "error")
    with full_backlog_listener() as full, _current(_exchange(connect_ms=200)) as exchange:
        _raises(httpcore.ConnectTimeout,
                lambda: CountingBackend({"h": "127.0.0.1"}).connect_tcp("h", full.getsockname()[1]))
    assert exchange.failure == IoFailure("connect", "timeout", "connect")
    _raises(httpcore.ConnectError, lambda: CountingBackend().connect_unix_socket("/run/receiver.sock"))


def test_connect_honours_the_local_address_and_socket_options(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    backend = CountingBackend({"h": "127.0.0.1"})
    keepalive = (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    streams = [backend.connect_tcp("h", port, local_address="127.0.0.2", socket_options=[keepalive])
               for _ in range(2)]  # two connections from one source address: the kernel picks the ports
    try:
        for stream in streams:
            accepted, peer = listener.accept()
            accepted.close()
            assert peer[0] == "127.0.0.2"
            sock = stream.get_extra_info("socket")
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1  # no Nagle delay on a request
    finally:
        for stream in streams:
            stream.close()
    plain = backend.connect_tcp("h", port)
    try:
        assert plain.get_extra_info("socket").getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 0
        assert plain.get_extra_info("client_addr")[0] == "127.0.0.1"
    finally:
        plain.close()
        listener.accept()[0].close()


def test_a_connection_on_descriptor_zero_is_not_taken_for_a_closed_one(
        pair: tuple[socket.socket, socket.socket]) -> None:
    # Socket activation (inetd, systemd) hands a process its connection as descriptor 0. Last in
    # the file: it swaps this process's descriptor 0 for a moment and puts it back.
    left, _ = pair
    saved = os.dup(0)
    try:
        os.dup2(left.fileno(), 0)
        on_zero = socket.socket(fileno=0)
        try:
            assert CountingStream(on_zero).get_extra_info("is_readable") is False
        finally:
            on_zero.detach()  # descriptor 0 is restored below, never closed here
    finally:
        os.dup2(saved, 0)
        os.close(saved)
