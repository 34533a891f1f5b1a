"""The counting backend's bounds at the edge of the request deadline (no network needed for the
deadline checks, a local socket pair for the counts)."""

from __future__ import annotations

import socket
import time

import httpcore
import pytest
from tr_support import timeouts

from sink.transport.exchange import CURRENT, Exchange, IoFailure
from sink.transport.network import CountingBackend, CountingStream


def _expired() -> Exchange:
    exchange = Exchange(timeouts(request_total_ms=100, dns_ms=100, connect_ms=100, tls_ms=100, write_ms=100,
                                 read_ms=100, idle_ms=100))
    exchange.started = time.monotonic() - 1.0
    return exchange


def test_an_expired_deadline_is_a_total_timeout_for_every_operation() -> None:
    left, right = socket.socketpair()
    try:
        for operation, call, error in (
            ("connect", lambda: CountingBackend({"h": "127.0.0.1"}).connect_tcp("h", 9), httpcore.ConnectTimeout),
            ("read", lambda: CountingStream(left).read(10), httpcore.ReadTimeout),
            ("write", lambda: CountingStream(left).write(b"x"), httpcore.WriteTimeout),
        ):
            exchange = _expired()
            token = CURRENT.set(exchange)
            try:
                with pytest.raises(error):
                    call()
            finally:
                CURRENT.reset(token)
            assert exchange.failure == IoFailure(operation, "timeout", "total")  # type: ignore[arg-type]
            assert exchange.bytes_sent == 0
    finally:
        left.close()
        right.close()


def test_bytes_are_counted_per_exchange_and_eof_is_recorded() -> None:
    left, right = socket.socketpair()
    try:
        stream = CountingStream(left)
        exchange = Exchange(timeouts())
        token = CURRENT.set(exchange)
        try:
            stream.write(b"hello")
            assert right.recv(5) == b"hello"
            right.sendall(b"abc")
            assert stream.read(10) == b"abc"
            right.close()
            assert stream.read(10) == b""
        finally:
            CURRENT.reset(token)
        assert (exchange.bytes_sent, exchange.bytes_received) == (5, 3)
        assert exchange.failure == IoFailure("read", "eof")
        assert exchange.bound("idle")[1] == "idle"
    finally:
        left.close()


def test_an_unpinned_host_is_never_resolved_by_the_backend() -> None:
    exchange = Exchange(timeouts())
    token = CURRENT.set(exchange)
    try:
        with pytest.raises(httpcore.ConnectError):
            CountingBackend().connect_tcp("localhost", 9)
    finally:
        CURRENT.reset(token)
    assert exchange.failure == IoFailure("connect", "error")
