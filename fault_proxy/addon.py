"""mitmproxy addon that applies fault rules at the phase each one names and keeps the request log.

mitmproxy's HTTP/1 hook order for one exchange (proxy/layers/http/__init__.py):
``requestheaders`` (body not read) -> ``request`` (whole body read, nothing forwarded) ->
upstream -> ``responseheaders`` -> ``response`` (whole response buffered, client has nothing)
-> bytes to the client; a flow ends in ``response`` or ``error``. ``flow.kill()`` inside a hook
closes the client connection without a byte (``check_killed`` after each hook).

Two phases need more than a hook:
- ``forwarded``: for a request with a body, the addon turns on request streaming in
  ``requestheaders``; mitmproxy then writes the body upstream as it arrives and fires
  ``request`` only after the complete request was handed to the upstream connection. For a
  request without a body there is no observable moment between forwarding and the receiver's
  answer, so such a fault acts at ``response_headers`` (recorded in the fault note).
- ``truncate``: the buffered response keeps its full ``Content-Length`` but only N body bytes, plus
  ``Connection: close``; mitmproxy sends head + N bytes and then closes the connection because of
  that header.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from mitmproxy import connection, http
from mitmproxy.connection import ConnectionState
from mitmproxy.net.http import status_codes

from fault_proxy.log_setup import redact
from fault_proxy.orphan import forward_orphan
from fault_proxy.request_log import FaultNote, RequestRecord
from fault_proxy.rules import (
    BODYLESS_STATUSES,
    CloseFault,
    DelayFault,
    Firing,
    HoldFault,
    KillFault,
    StatusFault,
    TruncateFault,
)
from fault_proxy.state import ProxyState, kill_process
from fault_proxy.wire import ClientWire
from fault_proxy.wire_text import MAX_ERROR_CHARS, MAX_NAME_CHARS, MAX_PATH_CHARS, readable, readable_names

_META_KEY = "fault_proxy"
# mitmproxy's body_size_limit messages; the proxy's own words add the bound (--max-body-bytes).
_BODY_LIMIT_MESSAGES = {
    "Request body exceeds mitmproxy's body_size_limit.": "request",
    "Response body exceeds mitmproxy's body_size_limit.": "response",
}


class _BodyTap:
    """Request ``stream`` callable: counts and hashes body chunks while passing them through."""

    def __init__(self) -> None:
        self.size = 0
        self.digest = hashlib.sha256()

    def __call__(self, chunk: bytes) -> bytes:
        self.size += len(chunk)
        self.digest.update(chunk)
        return chunk


@dataclass
class _FlowState:
    record: RequestRecord
    firings: list[Firing]
    tap: _BodyTap | None = None
    synthetic: bool = False
    done_phases: set[str] = field(default_factory=set)

    def at(self, phase: str) -> list[Firing]:
        return [f for f in self.firings if f.fault.phase == phase]


def _peer(conn: connection.Client) -> str:
    host, port, *_ = conn.peername or ("?", 0)
    return f"{host}:{port}"


def _request_has_body(request: http.Request) -> bool:
    if "chunked" in request.headers.get("transfer-encoding", "").lower():
        return True
    try:
        return int(request.headers.get("content-length", "0")) > 0
    except ValueError:
        return False


def _client_gone(flow: http.HTTPFlow) -> bool:
    return not (flow.client_conn.state & ConnectionState.CAN_READ)


async def _settle_client(flow: http.HTTPFlow, grace_s: float = 0.25) -> None:
    """A held request is often released just after its client was killed, before mitmproxy has read
    the close. Forwarded as a live client's, the flow would be dropped when the close arrives and the
    bytes would never reach the upstream; a short grace lets the close register first, so the
    departed client's request is delivered by ``forward_orphan``. A live client waits ``grace_s``."""
    deadline = asyncio.get_running_loop().time() + grace_s
    while not _client_gone(flow) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)


def _problem_body(status: int) -> str:
    reason = status_codes.RESPONSES.get(status, "Error")
    return f'{{"type":"about:blank","title":"{reason}","status":{status}}}'


def _glibc_malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: the allocator keeps what it keeps
        return None
    return trim


_MALLOC_TRIM = _glibc_malloc_trim()


def _release_buffers() -> None:
    """Free the bodies of finished exchanges now, and give the memory back to the system.

    mitmproxy's flow and layer objects form reference cycles, so a buffered body is freed only by
    the cyclic collector, whose full passes are rare: three refused 64 MiB bodies left the proxy
    200 MiB larger for good. After an exchange that buffered a large body (>= 1 MiB) the next
    request on its connection, or its close, runs a pass: milliseconds, against a body that took
    longer to move. A body grown piece by piece lives in glibc's heap, which keeps freed memory
    unless asked to return it (``malloc_trim``).
    """
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class FaultAddon:
    def __init__(self, state: ProxyState, wire: ClientWire, max_body_bytes: int) -> None:
        self.state = state
        self.max_body_bytes = max_body_bytes
        # What reaches the client is recorded by the wire (fault_proxy.wire), where mitmproxy
        # writes it; the hooks here only record what the proxy saw and decided.
        self.wire = wire

    def client_disconnected(self, client: connection.Client) -> None:
        if self.wire.forget(client.id):
            _release_buffers()

    # -- connection phase -------------------------------------------------------------------
    def client_connected(self, client: connection.Client) -> None:
        firings = self.state.rules.decide_connection()
        if not firings:
            return
        record = self.state.log.new(client.id, _peer(client))
        record.faults.extend(FaultNote(f.rule_id, "close", "connect") for f in firings)
        record.error = "closed by fault before reading any request byte"
        record.stamp("closed")
        # Setting client.error makes mitmproxy close the socket before reading from it.
        client.error = "fault-proxy: close at connect"

    # -- request phases ---------------------------------------------------------------------
    def requestheaders(self, flow: http.HTTPFlow) -> None:
        request = flow.request
        record = self.state.log.new(flow.client_conn.id, _peer(flow.client_conn))
        split = urlsplit(request.path)
        header_names = [name.lower() for name in request.headers]
        # Rules match what was sent; the log holds it escaped and bounded (fault_proxy.wire_text).
        record.method = readable(request.method, MAX_NAME_CHARS)
        record.path = readable(split.path, MAX_PATH_CHARS)
        query_names = {name for name, _ in parse_qsl(split.query, keep_blank_values=True)}
        record.query_names = readable_names(sorted(query_names))
        record.request_header_names = readable_names(header_names)
        record.reach("request_headers")
        self.wire.attach(flow.client_conn.id, record, request)  # lets go of the previous request
        if self.wire.take_large(flow.client_conn.id):  # the previous exchange here buffered a large body
            _release_buffers()
        firings = self.state.rules.decide_request(request.method, split.path, frozenset(header_names))
        fs = _FlowState(record, firings)
        flow.metadata[_META_KEY] = fs
        if not firings:
            return
        if self._act_terminal_only(flow, fs, "request_headers"):
            return
        wants_forwarded = bool(fs.at("forwarded"))
        request_phase_acts = bool(fs.at("request"))
        if wants_forwarded and not request_phase_acts and _request_has_body(request):
            fs.tap = _BodyTap()
            request.stream = fs.tap

    async def request(self, flow: http.HTTPFlow) -> None:
        fs = self._state_of(flow)
        if fs is None:
            return
        record = fs.record
        if fs.tap is not None:
            # Streaming: the whole request has already been written to the upstream connection.
            record.request_body_bytes = fs.tap.size
            record.request_body_sha256 = fs.tap.digest.hexdigest()
            record.reach("request")
            record.forwarded = "yes"
            record.reach("forwarded")
            self._act_terminal_only(flow, fs, "forwarded")
            return
        body = flow.request.raw_content or b""
        self.wire.buffered(flow.client_conn.id, len(body))
        record.request_body_bytes = len(body)
        record.request_body_sha256 = hashlib.sha256(body).hexdigest()
        record.reach("request")
        await self._act(flow, fs, "request")
        if flow.error is None and flow.response is None:
            record.forwarded = "attempted"

    async def responseheaders(self, flow: http.HTTPFlow) -> None:
        fs = self._state_of(flow)
        if fs is None or fs.synthetic or flow.response is None:
            return
        record = fs.record
        record.forwarded = "yes"
        record.reach("forwarded")
        record.upstream_status = flow.response.status_code
        record.response_header_names = [name.lower() for name in flow.response.headers]
        record.reach("response_headers")
        if "forwarded" not in fs.done_phases:
            # Bodyless request: the earliest observable point after forwarding is the answer.
            self._act_terminal_only(flow, fs, "forwarded", acted_at="response_headers")

    async def response(self, flow: http.HTTPFlow) -> None:
        fs = self._state_of(flow)
        if fs is None or flow.response is None:
            return
        record = fs.record
        if fs.synthetic:
            return
        body = flow.response.raw_content or b""
        self.wire.buffered(flow.client_conn.id, len(body))
        record.upstream_body_bytes = len(body)
        record.upstream_body_sha256 = hashlib.sha256(body).hexdigest()
        record.reach("response")
        await self._act(flow, fs, "response")

    def error(self, flow: http.HTTPFlow) -> None:
        fs = self._state_of(flow)
        if fs is None or flow.error is None:
            return
        record = fs.record
        if record.error is None:
            # mitmproxy's messages may quote what the client sent (a byte literal): never verbatim.
            record.error = readable(redact(self._own_words(flow.error.msg)), MAX_ERROR_CHARS)
        if record.forwarded == "no" and fs.tap is not None and flow.server_conn.timestamp_tcp_setup is not None:
            record.forwarded = "attempted"  # part of a streamed body reached the upstream connection
        if record.forwarded == "attempted" and flow.server_conn.timestamp_tcp_setup is None:
            # The upstream connection never opened (refused, unreachable): nothing was forwarded.
            record.forwarded = "no"
        record.stamp("error")

    def _own_words(self, message: str) -> str:
        side = _BODY_LIMIT_MESSAGES.get(message)
        return message if side is None else f"{side} body larger than {self.max_body_bytes} bytes"

    # -- fault application --------------------------------------------------------------------
    def _state_of(self, flow: http.HTTPFlow) -> _FlowState | None:
        fs: Any = flow.metadata.get(_META_KEY)
        return fs if isinstance(fs, _FlowState) else None

    def _act_terminal_only(
        self, flow: http.HTTPFlow, fs: _FlowState, phase: str, acted_at: str | None = None
    ) -> bool:
        """Phases where only kill/close can act (no awaiting). Returns True when the flow is ended."""
        fs.done_phases.add(phase)
        for firing in fs.at(phase):
            fault = firing.fault
            if isinstance(fault, KillFault):
                self._kill(fs, firing.rule_id, fault, acted_at or phase)
                if phase != "forwarded":
                    return self._close(flow, fs)
            elif isinstance(fault, CloseFault):
                fs.record.faults.append(FaultNote(firing.rule_id, "close", acted_at or phase))
                return self._close(flow, fs)
        return False

    async def _act(self, flow: http.HTTPFlow, fs: _FlowState, phase: str) -> None:
        fs.done_phases.add(phase)
        record = fs.record
        for firing in fs.at(phase):
            fault = firing.fault
            if isinstance(fault, KillFault):
                self._kill(fs, firing.rule_id, fault, phase)
                self._close(flow, fs)
                return
            if isinstance(fault, CloseFault):
                record.faults.append(FaultNote(firing.rule_id, "close", phase))
                self._close(flow, fs)
                return
            if isinstance(fault, DelayFault):
                record.faults.append(FaultNote(firing.rule_id, "delay", phase, {"seconds": fault.seconds}))
                await asyncio.sleep(fault.seconds)
                if self._end_if_client_gone(flow, fs, "delay"):
                    return
            elif isinstance(fault, HoldFault):
                if not await self._hold(flow, fs, firing.rule_id, fault):
                    return
            elif isinstance(fault, StatusFault):
                self._synthetic(flow, fs, firing.rule_id, fault)
                return
            elif isinstance(fault, TruncateFault):
                self._truncate(flow, fs, firing.rule_id, fault)
                return

    def _kill(self, fs: _FlowState, rule_id: str, fault: KillFault, acted_at: str) -> None:
        result = kill_process(fault.pid)
        fs.record.faults.append(
            FaultNote(rule_id, "kill", acted_at, {"pid": fault.pid, "signal": "SIGKILL", "result": result})
        )

    def _close(self, flow: http.HTTPFlow, fs: _FlowState) -> bool:
        if flow.killable:
            flow.kill()  # type: ignore[no-untyped-call]
        fs.record.stamp("closed")
        return True

    def _end_if_client_gone(self, flow: http.HTTPFlow, fs: _FlowState, during: str) -> bool:
        # mitmproxy would drop the flow itself after the hook; record why, and make it explicit.
        if not _client_gone(flow):
            return False
        fs.record.error = f"client closed its connection during {during}"
        self._close(flow, fs)
        return True

    async def _hold(self, flow: http.HTTPFlow, fs: _FlowState, rule_id: str, fault: HoldFault) -> bool:
        record = fs.record
        hold = self.state.holds.park(
            seq=record.seq,
            rule_id=rule_id,
            phase=fault.phase,
            method=record.method,
            path=record.path,
            timeout_seconds=fault.timeout_seconds,
            on_timeout=fault.on_timeout,
        )
        record.stamp(f"held_{fault.phase}")
        try:
            decision, timed_out = await hold.wait()
        finally:
            self.state.holds.finish(hold)
        record.stamp(f"{decision}_{fault.phase}")
        detail: dict[str, object] = {"hold_id": hold.hold_id, "decision": decision, "timed_out": timed_out}
        record.faults.append(FaultNote(rule_id, "hold", fault.phase, detail))
        if decision == "cut":
            self._close(flow, fs)
            return False
        if fault.phase == "request" and decision == "release":
            await _settle_client(flow)
        if _client_gone(flow) and fault.phase == "request":
            await forward_orphan(flow.request, record)  # the bytes reach the receiver after all
            self._close(flow, fs)
            return False
        return not self._end_if_client_gone(flow, fs, "hold")

    def _synthetic(self, flow: http.HTTPFlow, fs: _FlowState, rule_id: str, fault: StatusFault) -> None:
        headers = dict(fault.headers)
        bodyless = fault.status in BODYLESS_STATUSES
        default_body = "" if bodyless else _problem_body(fault.status)
        body = fault.body if fault.body is not None else default_body
        if fault.body is None and not bodyless and not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "application/problem+json"
        flow.response = http.Response.make(fault.status, body.encode(), headers)
        if bodyless:  # no Content-Length either: a 204 must not carry one, a 304's would describe another body
            flow.response.headers.pop("content-length", None)
        fs.synthetic = True
        fs.record.synthetic = True
        fs.record.response_source = "fault"
        fs.record.faults.append(FaultNote(rule_id, "status", fault.phase, {"status": fault.status}))

    def _truncate(self, flow: http.HTTPFlow, fs: _FlowState, rule_id: str, fault: TruncateFault) -> None:
        response = flow.response
        assert response is not None
        body = response.raw_content or b""
        kept = body[: fault.body_bytes]
        # Order matters: raw_content does not touch headers, so the full length stays announced.
        response.raw_content = kept
        response.headers.pop("transfer-encoding", None)
        response.headers["content-length"] = str(len(body))
        response.headers["connection"] = "close"
        detail: dict[str, object] = {"body_bytes": len(kept), "declared_bytes": len(body)}
        fs.record.faults.append(FaultNote(rule_id, "truncate", "response", detail))
