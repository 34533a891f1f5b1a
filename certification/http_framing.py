"""Split the bytes a client sent on one connection into HTTP/1.1 requests, incrementally.

The wire tap (``certification.wiretap``) feeds every chunk a sink writes; the framer says where each
request's head ends and how its body is framed (``Content-Length`` or ``chunked``), so the tap can
record what left the client — heads and bodies, also of requests the fault proxy cut before reading
them — and add a marker header to the request a row's fault targets.

Deliberately small and strict: one request line, header lines up to the empty line, then the body by
its framing. Anything else (a head over 64 KiB, a malformed chunk size, a request line it cannot
read) ends framing for the connection: the rest is kept as raw bytes, marked ``unframed``, and the
checkers treat such a request's targets as unknown (conservatively: every day).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
_TOKEN = frozenset(b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


class FramingError(ValueError):
    """The bytes are not an HTTP/1.1 request stream the framer can follow."""


@dataclass
class RawRequest:
    """One request as the client sent it (bytes as sent, never decoded for logging)."""

    start: int
    """Offset of its first byte in the connection's client stream."""
    head: bytes = b""
    method: str = ""
    target: str = ""
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    """(lower-case name, raw value) in order."""
    head_complete: bool = False
    body: bytearray = field(default_factory=bytearray)
    body_complete: bool = False
    body_truncated: bool = False
    """The body was longer than MAX_BODY_BYTES: only its beginning is kept."""
    unframed: bool = False

    def header(self, name: str) -> bytes | None:
        values = [value for key, value in self.headers if key == name]
        return values[0] if len(values) == 1 else None

    def header_values(self, name: str) -> list[bytes]:
        return [value for key, value in self.headers if key == name]


class _Body(Enum):
    NONE = "none"
    LENGTH = "length"
    CHUNKED = "chunked"


def parse_head(head: bytes) -> tuple[str, str, list[tuple[str, bytes]]]:
    """Request line and header fields of a complete head (without the final empty line)."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[0] or not set(parts[0]) <= _TOKEN or not parts[2].startswith(b"HTTP/1."):
        raise FramingError("not an HTTP/1.1 request line")
    headers: list[tuple[str, bytes]] = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or not set(name) <= _TOKEN:
            raise FramingError("a header line without a field name")
        headers.append((name.decode("ascii").lower(), value.strip(b" \t")))
    return parts[0].decode("ascii"), parts[1].decode("latin-1"), headers


def _framing(headers: list[tuple[str, bytes]]) -> tuple[_Body, int]:
    codings = [value.lower() for name, value in headers if name == "transfer-encoding"]
    if codings:
        if codings[-1].split(b",")[-1].strip() != b"chunked":
            raise FramingError("a transfer coding other than chunked")
        return _Body.CHUNKED, 0
    lengths = {value for name, value in headers if name == "content-length"}
    if not lengths:
        return _Body.NONE, 0
    if len(lengths) != 1 or not next(iter(lengths)).isdigit() or len(next(iter(lengths))) > 18:
        raise FramingError("an invalid Content-Length")
    length = int(next(iter(lengths)))
    return (_Body.LENGTH, length) if length else (_Body.NONE, 0)


class RequestFramer:
    """Feed it the client's bytes in order; it keeps the requests seen so far."""

    def __init__(self) -> None:
        self.requests: list[RawRequest] = []
        self._buffer = bytearray()
        self._offset = 0
        """Stream offset of ``_buffer[0]``."""
        self._current: RawRequest | None = None
        self._body = _Body.NONE
        self._remaining = 0
        self._chunk_state = "size"
        self._failed = False

    @property
    def failed(self) -> bool:
        return self._failed

    def feed(self, data: bytes) -> list[RawRequest]:
        """Consume ``data``; returns the requests whose head became complete in this call."""
        completed_heads: list[RawRequest] = []
        if self._failed:
            if self.requests:
                self._keep(self.requests[-1], data)
            return completed_heads
        self._buffer.extend(data)
        try:
            while self._step(completed_heads):
                pass
        except FramingError:
            self._failed = True
            if self._current is None:
                self._current = RawRequest(start=self._offset)
                self.requests.append(self._current)
            self._current.unframed = True
            self._keep(self._current, bytes(self._buffer))
            self._buffer.clear()
        return completed_heads

    @staticmethod
    def _keep(request: RawRequest, data: bytes) -> None:
        room = MAX_BODY_BYTES - len(request.body)
        request.body.extend(data[:max(0, room)])
        request.body_truncated = request.body_truncated or len(data) > room

    def _consume(self, count: int) -> bytes:
        taken = bytes(self._buffer[:count])
        del self._buffer[:count]
        self._offset += count
        return taken

    def _step(self, completed_heads: list[RawRequest]) -> bool:
        if not self._buffer:
            return False
        if self._current is None:
            self._current = RawRequest(start=self._offset)
            self.requests.append(self._current)
        request = self._current
        if not request.head_complete:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0 or end > MAX_HEAD_BYTES:  # the limit holds however the head arrives
                if len(self._buffer) > MAX_HEAD_BYTES:
                    raise FramingError("a request head over 64 KiB")
                request.head = bytes(self._buffer)
                return False
            head = self._consume(end + 4)
            request.head = head[:-4]
            request.method, request.target, request.headers = parse_head(request.head)
            request.head_complete = True
            completed_heads.append(request)
            self._body, self._remaining = _framing(request.headers)
            self._chunk_state = "size"
            if self._body is _Body.NONE:
                self._finish()
            return True
        if self._body is _Body.LENGTH:
            chunk = self._consume(min(self._remaining, len(self._buffer)))
            self._keep(request, chunk)
            self._remaining -= len(chunk)
            if self._remaining == 0:
                self._finish()
            return bool(self._buffer) or self._current is None
        return self._chunked_step(request)

    def _chunked_step(self, request: RawRequest) -> bool:
        if self._chunk_state == "data":
            chunk = self._consume(min(self._remaining, len(self._buffer)))
            self._keep(request, chunk)
            self._remaining -= len(chunk)
            if self._remaining == 0:
                self._chunk_state = "data_end"
            return bool(self._buffer)
        end = self._buffer.find(b"\r\n")
        if end < 0:
            if len(self._buffer) > 4096:
                raise FramingError("a chunk line over 4 KiB")
            return False
        line = self._consume(end + 2)[:-2]
        if self._chunk_state == "data_end":
            if line:
                raise FramingError("chunk data longer than its size")
            self._chunk_state = "size"
        elif self._chunk_state == "size":
            size_text = line.split(b";", 1)[0].strip()
            if not size_text or len(size_text) > 16 or not all(c in b"0123456789abcdefABCDEF" for c in size_text):
                raise FramingError("an invalid chunk size")
            self._remaining = int(size_text, 16)
            self._chunk_state = "data" if self._remaining else "trailers"
        elif not line:  # the empty line after the trailers
            self._finish()
        return bool(self._buffer) or self._current is None

    def _finish(self) -> None:
        assert self._current is not None
        self._current.body_complete = True
        self._current = None
