"""Bounds on what one client of the proxied port can make the proxy hold: bytes and time.

mitmproxy's HTTP/1 server layer reads a request head into a buffer with no size limit (its own
source says "FIXME: protect against header size DoS"), buffers a request body with no limit (the
fault proxy buffers every body, on purpose), and waits for either for as long as the client keeps
the connection open: a never-ending chunked body grew the proxy by 300 MB, half-sent headers were
held for minutes. ``install_limits`` wraps ``Http1Server._handle_event`` so that every request is
read within ``ReadLimits``:

- head: at most ``max_head_bytes`` (else ``431``), complete within ``head_timeout`` of its first
  byte (else ``408``);
- body: at most ``max_body_bytes`` of body (``413``: at once when a chunk size announces more,
  else when the count passes it; a larger ``Content-Length`` is refused by mitmproxy's own
  ``body_size_limit``, set to the same bound, before the body is read), complete within
  ``body_timeout`` of the head (else ``408``); buffered or streamed to the upstream alike;
- bytes sent ahead of the answer (pipelining): at most ``max_head_bytes``, else the connection is
  closed.

Each refusal answers with the proxy's problem+json (``fault_proxy.wire``) and closes the connection.
A refused body ends its request's flow with a protocol error (the request log records why and what
was handed to the client); a refused head has no request yet, so ``ClientWire.head_refused`` adds
a log entry of its own (as it does for a head mitmproxy cannot parse and answers 400 itself).
Deadlines use mitmproxy's own timer command (``RequestWakeup``), at most one outstanding per
connection, so a keep-alive connection does not pile up timers.
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from mitmproxy.connection import ConnectionState
from mitmproxy.proxy import commands, events
from mitmproxy.proxy.layers.http import _http1
from mitmproxy.proxy.layers.http._base import ReceiveHttp
from mitmproxy.proxy.layers.http._events import RequestData, RequestHeaders, RequestProtocolError

from fault_proxy import wire
from fault_proxy.config import ReadLimits

Commands = Generator[commands.Command, Any, None]

_HEAD_END = re.compile(rb"\r?\n\r?\n")


@dataclass
class _Reading:
    """What one client connection is in the middle of reading, and until when."""

    phase: str | None = None  # "head", "body" or None (nothing being read, or nothing bounded)
    expires_at: float = 0.0
    wakeup: commands.RequestWakeup | None = None
    wakeup_at: float = 0.0
    body_bytes: int = 0


_limits = ReadLimits()
_patched = False


def install_limits(limits: ReadLimits) -> None:
    """Patch mitmproxy's HTTP/1 server layer once per process; a later call swaps the limits only."""
    global _limits, _patched  # noqa: PLW0603 - the patch is process-wide, so are the limits it applies
    _limits = limits
    if _patched:
        return
    _patched = True
    original = _http1.Http1Server._handle_event

    def handle_event(self: _http1.Http1Server, event: events.Event) -> Commands:
        reading: _Reading = self.__dict__.setdefault("_fault_proxy_reading", _Reading())
        if isinstance(event, events.Wakeup):
            if event.command is reading.wakeup:  # the layer requests no wakeups of its own
                yield from _woken(self, reading)
            return
        if isinstance(event, events.DataReceived):
            refusal = _refusal_before(self, event.data)
            if refusal is not None:
                yield from refusal
                return
        reading_head = self.state == self.read_headers
        yield from _counted(self, reading, original(self, event))
        if self.state != self.done:
            yield from _after(self, reading)
        elif reading_head and self.request is None:  # mitmproxy answered 400 to a head it could not parse
            _head_report(self, 400, "the request head could not be parsed")

    _http1.Http1Server._handle_event = handle_event  # type: ignore[method-assign, assignment]


def _refusal_before(layer: _http1.Http1Server, data: bytes) -> Commands | None:
    """Refuse (or drop) bytes before mitmproxy buffers them."""
    if layer.state == layer.done:
        return _nothing()  # the connection is closing: mitmproxy would only buffer them
    pending = len(layer.buf) + len(data)
    if pending <= _limits.max_head_bytes:
        return None
    if layer.state == layer.read_headers:
        window = (bytes(layer.buf) + data[: _limits.max_head_bytes + 4])[: _limits.max_head_bytes + 4]
        if _HEAD_END.search(window) is None:
            return _refuse_head(layer, 431, f"request head larger than {_limits.max_head_bytes} bytes")
    elif layer.state == layer.wait:
        return _cut_ahead(layer)
    return None


def _nothing() -> Commands:
    yield from ()


def _counted(layer: _http1.Http1Server, reading: _Reading, inner: Commands) -> Commands:
    """Pass ``inner``'s commands on, counting request body bytes and refusing past the limit."""
    reply: Any = None
    while True:
        try:
            command = inner.send(reply)
        except StopIteration:
            return
        if isinstance(command, ReceiveHttp) and isinstance(command.event, RequestHeaders):
            reading.body_bytes = 0  # a Content-Length above the limit: mitmproxy's body_size_limit refuses it
        elif isinstance(command, ReceiveHttp) and isinstance(command.event, RequestData):
            reading.body_bytes += len(command.event.data)
            if reading.body_bytes > _limits.max_body_bytes:
                inner.close()
                yield from _refuse_body(layer, reading, 413, _too_large())
                return
        reply = yield command


def _after(layer: _http1.Http1Server, reading: _Reading) -> Commands:
    """Start, keep or stop the deadline of what the connection is reading now."""
    if layer.state == layer.read_headers:
        if len(layer.buf) > _limits.max_head_bytes:  # e.g. a flood of blank lines before a request line
            yield from _refuse_head(layer, 431, f"request head larger than {_limits.max_head_bytes} bytes")
        elif layer.buf and reading.phase != "head":
            yield from _arm(reading, "head", _limits.head_timeout)
        elif not layer.buf:
            reading.phase = None
    elif layer.state == layer.read_body:
        announced = getattr(layer.body_reader, "_bytes_in_chunk", 0)  # h11's ChunkedReader: the chunk still due
        if reading.body_bytes + announced > _limits.max_body_bytes:
            yield from _refuse_body(layer, reading, 413, _too_large())
        elif len(layer.buf) > _limits.max_head_bytes:  # framing that never completes (a chunk header)
            yield from _refuse_body(layer, reading, 400, "request body framing larger than the head limit")
        elif reading.phase != "body":
            yield from _arm(reading, "body", _limits.body_timeout)
    else:
        reading.phase = None


def _arm(reading: _Reading, phase: str, timeout: float) -> Commands:
    now = time.monotonic()
    reading.phase, reading.expires_at = phase, now + timeout
    if reading.wakeup is None or reading.wakeup_at > reading.expires_at:
        reading.wakeup, reading.wakeup_at = commands.RequestWakeup(timeout), reading.expires_at
        yield reading.wakeup


def _woken(layer: _http1.Http1Server, reading: _Reading) -> Commands:
    reading.wakeup = None
    if reading.phase is None or layer.state == layer.done:
        return
    remaining = reading.expires_at - time.monotonic()
    if remaining > 0:  # the phase changed since this wakeup was requested: wait for the rest
        reading.wakeup, reading.wakeup_at = commands.RequestWakeup(remaining), reading.expires_at
        yield reading.wakeup
    elif reading.phase == "head" and layer.state == layer.read_headers:
        yield from _refuse_head(layer, 408, f"request head not complete within {_limits.head_timeout:g} s")
    elif reading.phase == "body" and layer.state == layer.read_body:
        yield from _refuse_body(layer, reading, 408, f"request body not complete within {_limits.body_timeout:g} s")


def _too_large() -> str:
    return f"request body larger than {_limits.max_body_bytes} bytes"


def _answerable(layer: _http1.Http1Server, status: int) -> int | None:
    """``status`` when the client can still take an answer to this request, else None (an interim
    ``100 Continue`` already sent is no answer: a final one may follow it)."""
    answered = layer.response is not None and layer.response.status_code >= 200
    return status if layer.conn.state & ConnectionState.CAN_WRITE and not answered else None


def _close(layer: _http1.Http1Server, answer: int | None) -> Commands:
    """Write the proxy's problem+json ``answer`` (if any), close the connection, read nothing more."""
    if answer is not None:
        yield commands.SendData(layer.conn, wire.problem_error_response(answer))
    yield commands.CloseConnection(layer.conn)
    layer.state = layer.done


def _refuse_head(layer: _http1.Http1Server, status: int, reason: str) -> Commands:
    answer = _answerable(layer, status)
    yield from _close(layer, answer)
    _head_report(layer, answer, reason)


def _head_report(layer: _http1.Http1Server, answer: int | None, reason: str) -> None:
    client_wire = wire.installed()
    if client_wire is not None:
        host, port, *_ = layer.conn.peername or ("?", 0)
        client_wire.head_refused(layer.conn.id, f"{host}:{port}", answer, reason)


def _refuse_body(layer: _http1.Http1Server, reading: _Reading, status: int, reason: str) -> Commands:
    reading.phase = None
    client_wire = wire.installed()
    if client_wire is not None:
        client_wire.buffered(layer.conn.id, reading.body_bytes)
    answer = _answerable(layer, status)
    yield from _close(layer, answer)
    _report(layer, answer, reason)
    # The request's flow ends with this error (its error hook stamps the log entry).
    yield ReceiveHttp(RequestProtocolError(layer.stream_id, reason, code=status))


def _cut_ahead(layer: _http1.Http1Server) -> Commands:
    yield from _close(layer, None)
    _report(layer, None, f"the client sent more than {_limits.max_head_bytes} bytes ahead of the answer")


def _report(layer: _http1.Http1Server, answer: int | None, reason: str) -> None:
    client_wire = wire.installed()
    if client_wire is not None and layer.request is not None:
        client_wire.refused(layer.conn.id, layer.request, answer, reason)
