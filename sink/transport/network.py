"""A counting network backend for httpcore's connection pool.

It replaces httpcore's ``SyncBackend`` so that the transport knows, for the request in flight:
how many request bytes the local kernel accepted (each ``send`` return value, TLS plaintext
included), which operation failed and how (timeout, error, or a clean EOF), and which bound of
the profile's timeout vector expired. It also connects to the address the transport resolved
itself (under ``dns_ms``), never resolving the host name again.

A counted byte was accepted by the local kernel, not necessarily by the peer.
"""

from __future__ import annotations

import select
import socket
import ssl
import time
from collections.abc import Iterable, Mapping
from typing import Any

import httpcore

from sink.transport.exchange import CURRENT, Bound, Exchange, IoFailure

SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]


def _exchange() -> Exchange | None:
    return CURRENT.get()


def _timeout(phase: Bound, fallback: float | None) -> tuple[float | None, Bound | None]:
    exchange = _exchange()
    if exchange is None:
        return fallback, None
    return exchange.bound(phase)


def _record(operation: Any, cause: Any, bound: Bound | None = None) -> None:
    exchange = _exchange()
    if exchange is not None:
        exchange.record_failure(IoFailure(operation, cause, bound))


class CountingStream(httpcore.NetworkStream):
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        exchange = _exchange()
        phase: Bound = "idle" if exchange is not None and exchange.bytes_received else "read"
        seconds, bound = _timeout(phase, timeout)
        if seconds is not None and seconds <= 0:
            _record("read", "timeout", bound)
            raise httpcore.ReadTimeout("request deadline reached")
        try:
            self._sock.settimeout(seconds)
            data = self._sock.recv(max_bytes)
        except TimeoutError:
            _record("read", "timeout", bound)
            raise httpcore.ReadTimeout("read bound expired") from None
        except OSError as exc:
            _record("read", "error")
            raise httpcore.ReadError(type(exc).__name__) from None
        if exchange is not None:
            if data:
                exchange.bytes_received += len(data)
            else:
                _record("read", "eof")
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        exchange = _exchange()
        view = memoryview(buffer)
        while view:
            seconds, bound = _timeout("write", timeout)
            if seconds is not None and seconds <= 0:
                _record("write", "timeout", bound)
                raise httpcore.WriteTimeout("request deadline reached")
            try:
                self._sock.settimeout(seconds)
                sent = self._sock.send(view)
            except TimeoutError:
                _record("write", "timeout", bound)
                raise httpcore.WriteTimeout("write bound expired") from None
            except OSError as exc:
                _record("write", "error")
                raise httpcore.WriteError(type(exc).__name__) from None
            if exchange is not None:
                exchange.bytes_sent += sent
            view = view[sent:]

    def close(self) -> None:
        self._sock.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        seconds, bound = _timeout("tls", timeout)
        if seconds is not None and seconds <= 0:
            self._sock.close()
            _record("tls", "timeout", bound)
            raise httpcore.ConnectTimeout("request deadline reached")
        try:
            self._sock.settimeout(seconds)
            wrapped = ssl_context.wrap_socket(self._sock, server_hostname=server_hostname)
        except TimeoutError:
            self._sock.close()
            _record("tls", "timeout", bound)
            raise httpcore.ConnectTimeout("tls bound expired") from None
        except OSError as exc:
            self._sock.close()
            _record("tls", "error")
            raise httpcore.ConnectError(type(exc).__name__) from None
        return CountingStream(wrapped)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object" and isinstance(self._sock, ssl.SSLSocket):
            return self._sock._sslobj  # type: ignore[attr-defined]  # what httpcore's own stream returns
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "socket":
            return self._sock
        if info == "is_readable":
            # The pool asks this of an idle keep-alive connection: readable means the peer closed
            # it (or sent garbage), so it must not carry the next request.
            if self._sock.fileno() < 0:
                return True
            readable, _, _ = select.select([self._sock], [], [], 0)
            return bool(readable)
        return None


class CountingBackend(httpcore.NetworkBackend):
    """Connects to pinned addresses (host name → IP resolved by the transport)."""

    def __init__(self, pinned: Mapping[str, str] | None = None) -> None:
        self._pinned = dict(pinned or {})

    def pin(self, host: str, address: str) -> None:
        self._pinned[host] = address

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        address = self._pinned.get(host)
        if address is None:
            # The transport resolves and pins before every send; reaching here would mean a
            # second, unbounded resolution with no recorded address.
            _record("connect", "error")
            raise httpcore.ConnectError("host not resolved by the transport")
        seconds, bound = _timeout("connect", timeout)
        if seconds is not None and seconds <= 0:
            # A zero socket timeout means non-blocking, which would fail as an error, not a timeout.
            _record("connect", "timeout", bound)
            raise httpcore.ConnectTimeout("request deadline reached")
        source = None if local_address is None else (local_address, 0)
        try:
            sock = socket.create_connection((address, port), seconds, source_address=source)
        except TimeoutError:
            _record("connect", "timeout", bound)
            raise httpcore.ConnectTimeout("connect bound expired") from None
        except OSError as exc:
            _record("connect", "error")
            raise httpcore.ConnectError(type(exc).__name__) from None
        for option in socket_options or ():
            sock.setsockopt(*option)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return CountingStream(sock)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[SocketOption] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not a REST authority")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)  # only reached through httpcore retries, which the transport disables
