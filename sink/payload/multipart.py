"""Deterministic ``multipart/form-data`` framing (RFC 7578) of one payload part plus scalar parts.

Layout, CRLF framed: every scalar part in profile order, then the payload part, then the close
delimiter. The boundary is derived from the child's receiver mutation key and a counter, and is
checked against every part — scalar values, the file name, part headers and every byte of the
payload (streamed, with an overlap window across chunks). On a collision the next counter is
tried; the chosen boundary is part of the rendered request identity.
"""

from __future__ import annotations

from sink.canonical import hash_fields
from sink.payload.rendering import RenderedRequest

CRLF = b"\r\n"
MAX_BOUNDARY_ATTEMPTS = 16


def boundary_candidate(receiver_mutation_key: str, attempt: int) -> str:
    digest = hash_fields("multipart_boundary", {"receiver_mutation_key": receiver_mutation_key, "attempt": attempt})
    return "restproof-" + digest.removeprefix("sha256:")[:40]


def _disposition(name: str, filename: str | None = None) -> bytes:
    text = f'Content-Disposition: form-data; name="{name}"'
    if filename is not None:
        text += f'; filename="{filename}"'
    return text.encode("ascii")


def frame(rendered: RenderedRequest, boundary: str) -> tuple[bytes, bytes]:
    """(bytes before the payload, bytes after it)."""
    if rendered.payload_part_name is None or rendered.filename is None or rendered.part_content_type is None:
        raise ValueError("not a multipart request")
    delimiter = b"--" + boundary.encode("ascii")
    prefix = bytearray()
    for name, value in rendered.scalar_parts:
        prefix += delimiter + CRLF + _disposition(name) + CRLF + CRLF + value.encode("utf-8") + CRLF
    prefix += delimiter + CRLF + _disposition(rendered.payload_part_name, rendered.filename) + CRLF
    prefix += b"Content-Type: " + rendered.part_content_type.encode("ascii") + CRLF + CRLF
    suffix = CRLF + delimiter + b"--" + CRLF
    return bytes(prefix), suffix


def collides_with_parts(rendered: RenderedRequest, boundary: str) -> bool:
    texts = [value for _, value in rendered.scalar_parts]
    texts += [name for name, _ in rendered.scalar_parts]
    texts += [str(rendered.filename), str(rendered.payload_part_name), str(rendered.part_content_type)]
    return any(boundary in text for text in texts)


class BoundaryScanner:
    """Streams payload bytes and remembers whether any candidate boundary occurs in them."""

    def __init__(self, candidates: list[str]) -> None:
        self._needles = [candidate.encode("ascii") for candidate in candidates]
        self._overlap = max(len(needle) for needle in self._needles) - 1
        self._tail = b""
        self.hits: set[int] = set()

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        window = self._tail + chunk
        for index, needle in enumerate(self._needles):
            if index not in self.hits and needle in window:
                self.hits.add(index)
        self._tail = window[-self._overlap:] if self._overlap else b""

    def first_free(self) -> int | None:
        return next((index for index in range(len(self._needles)) if index not in self.hits), None)
