"""What the proxy hands to each client connection, recorded where mitmproxy writes it.

Two things here need a hand on mitmproxy's HTTP/1 server layer, which no addon hook reaches:

1. mitmproxy answers errors of its own (upstream unreachable, upstream closed before answering, an
   unparseable request head) with an HTML page carrying ``Server: mitmproxy <version>`` and the
   internal error text. ``make_error_response`` is replaced with one that answers the project's
   problem+json: a fixed body per status, no internal text, ``Connection: close``.
2. The request log must say what the client was handed, not what the proxy meant to send. The
   addon's hooks run before mitmproxy writes (the ``response`` hook sees a response that a fault
   may still drop), and mitmproxy's own error answers pass no hook at all. So ``Http1Server.send``
   is wrapped: every ``SendData`` it yields to a writable client connection is accounted to the
   record of the request in flight on that connection (HTTP/1: one at a time).

Both are installed once per process by ``install``; the wrapper passes every command through
unchanged, so mitmproxy behaves as before apart from the bytes of its own error answers.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from mitmproxy import http
from mitmproxy.connection import ConnectionState
from mitmproxy.net.http import http1, status_codes
from mitmproxy.proxy import commands
from mitmproxy.proxy.layers.http import _http1
from mitmproxy.proxy.layers.http._events import (
    ResponseData,
    ResponseEndOfMessage,
    ResponseHeaders,
    ResponseProtocolError,
)

from fault_proxy.request_log import RequestLog, RequestRecord

_DETAILS = {
    400: ("bad-request", "the request could not be parsed"),
    408: ("request-timeout", "the request did not arrive within the proxy's time bound"),
    413: ("too-large", "the request body is larger than the proxy's size bound"),
    431: ("head-too-large", "the request head is larger than the proxy's size bound"),
    502: ("upstream-error", "the proxy got no usable answer from the upstream receiver"),
}


def _reason(status: int) -> str:
    known = status_codes.RESPONSES.get(status)  # mitmproxy's table lacks some (431)
    if known:
        return known
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def problem_error_body(status: int) -> bytes:
    kind, detail = _DETAILS.get(status, ("proxy-error", "the proxy could not complete the exchange"))
    document = {
        "type": f"urn:fault-proxy:problem:{kind}",
        "title": _reason(status),
        "status": status,
        "detail": detail,
    }
    return json.dumps(document, separators=(",", ":")).encode()


def problem_error_response(status_code: int, message: str = "") -> bytes:
    """Replacement for mitmproxy's ``make_error_response``: ``message`` (internal text) is dropped."""
    del message
    response = http.Response.make(
        status_code,
        problem_error_body(status_code),
        {"Content-Type": "application/problem+json", "Connection": "close"},
    )
    response.reason = _reason(status_code)
    raw: bytes = http1.assemble_response(response)  # type: ignore[no-untyped-call]
    return raw


LARGE_BODY_BYTES = 1 << 20


@dataclass
class _Verdict:
    """The proxy's own refusal of a request whose log entry may not exist yet."""

    request: http.Request
    status: int | None
    reason: str


class ClientWire:
    """Records, per client connection, what was handed to it for the request in flight.

    The size and time bounds (``fault_proxy.wire_limits``) act inside mitmproxy's connection layer,
    where a request's log entry may not exist yet (the hook that creates it runs later). Their
    verdicts name the request object; ``attach`` applies a verdict to the entry made for it.
    """

    def __init__(self, log: RequestLog | None = None) -> None:
        self._log = log
        self._in_flight: dict[str, tuple[RequestRecord, http.Request | None]] = {}
        self._verdicts: dict[str, _Verdict] = {}
        # Connections that buffered a large body (see FaultAddon.client_disconnected).
        self.large_bodies: set[str] = set()

    def attach(self, connection_id: str, record: RequestRecord, request: http.Request | None = None) -> None:
        self._in_flight[connection_id] = (record, request)
        verdict = self._verdicts.get(connection_id)
        if verdict is not None and verdict.request is request:
            del self._verdicts[connection_id]
            self._apply(record, verdict)

    def forget(self, connection_id: str) -> bool:
        """Drop what is kept for a closed connection; True when it had buffered a large body."""
        self._in_flight.pop(connection_id, None)
        self._verdicts.pop(connection_id, None)
        return self.take_large(connection_id)

    def take_large(self, connection_id: str) -> bool:
        """True (once) when an exchange on this connection buffered a large body since last asked."""
        if connection_id in self.large_bodies:
            self.large_bodies.discard(connection_id)
            return True
        return False

    def buffered(self, connection_id: str, size: int) -> None:
        if size >= LARGE_BODY_BYTES:
            self.large_bodies.add(connection_id)

    def current(self, connection_id: str) -> RequestRecord | None:
        entry = self._in_flight.get(connection_id)
        return entry[0] if entry is not None else None

    def refused(self, connection_id: str, request: http.Request, status: int | None, reason: str) -> None:
        """The proxy answered ``status`` itself (None: it only closed) and ended ``request``."""
        verdict = _Verdict(request, status, reason)
        entry = self._in_flight.get(connection_id)
        if entry is not None and entry[1] is request:
            self._apply(entry[0], verdict)
        else:
            self._verdicts[connection_id] = verdict

    def head_refused(self, connection_id: str, peer: str, status: int | None, reason: str) -> None:
        """A request head refused before it was parsed: a log entry of its own, with no request fields."""
        if self._log is None:
            return
        record = self._log.new(connection_id, peer)
        record.error = reason
        record.stamp("closed")
        if status is not None:
            self.handed(record, ResponseProtocolError(0, reason, status))

    def _apply(self, record: RequestRecord, verdict: _Verdict) -> None:
        if record.error is None:
            record.error = verdict.reason
        interim_only = record.status_sent is None or record.status_sent < 200  # e.g. a 100 Continue
        if verdict.status is not None and interim_only:
            self.handed(record, ResponseProtocolError(0, verdict.reason, verdict.status))
        record.stamp("closed")

    @staticmethod
    def handed(record: RequestRecord, event: object) -> None:
        if isinstance(event, ResponseHeaders):
            record.status_sent = event.response.status_code
            record.response_head_sent = True
            if record.response_source is None:
                record.response_source = "upstream"
        elif isinstance(event, ResponseData):
            record.response_body_bytes_sent += len(event.data)
        elif isinstance(event, ResponseProtocolError):
            # One of mitmproxy's own error answers (rendered by problem_error_response).
            record.status_sent = event.code
            record.response_head_sent = True
            record.response_body_bytes_sent = len(problem_error_body(event.code))
            record.response_source = "proxy"


_installed: ClientWire | None = None


def installed() -> ClientWire | None:
    """The wire the patched layer reports to (None before ``install``)."""
    return _installed


def install(wire: ClientWire) -> None:
    """Patch mitmproxy's HTTP/1 server layer once per process; a later call swaps the wire only."""
    global _installed  # noqa: PLW0603 - the patch is process-wide, so is the wire it reports to
    already_patched = _installed is not None
    _installed = wire
    if already_patched:
        return
    _http1.make_error_response = problem_error_response
    original = _http1.Http1Server.send

    def send(self: _http1.Http1Server, event: Any) -> Generator[commands.Command, Any, None]:
        wire = _installed
        record = wire.current(self.conn.id) if wire is not None else None
        inner = original(self, event)
        result: Any = None
        while True:
            try:
                command = inner.send(result)
            except StopIteration:
                break
            if (
                record is not None
                and isinstance(command, commands.SendData)
                and command.connection is self.conn
                and self.conn.state & ConnectionState.CAN_WRITE
            ):
                ClientWire.handed(record, event)
            result = yield command
        if record is not None and isinstance(event, ResponseEndOfMessage) and record.response_head_sent:
            record.reach("delivered")

    _http1.Http1Server.send = send  # type: ignore[method-assign]
