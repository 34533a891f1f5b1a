"""Stream a ``BodySource`` with exactly its sealed length and digest.

The last chunk is held back until the whole body was hashed: a body whose bytes or length do
not match what sealing measured is aborted before its final byte reaches the kernel, so the
receiver never sees a complete request carrying the wrong bytes (the declared Content-Length
is never reached). A source yielding more bytes than its length is stopped before the excess.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from sink.contracts.transport import BodySource
from sink.transport.exchange import CURRENT, IoFailure


class BytesBody:
    """A small in-memory ``BodySource`` (a token request's form body; a test's request body)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    @property
    def length(self) -> int:
        return len(self._data)

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self._data).hexdigest()

    def chunks(self) -> Iterator[bytes]:
        yield self._data


class BodyMismatch(Exception):
    """The body source did not produce its sealed bytes (or failed while producing them)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"body source rejected: {reason}")
        self.reason = reason


def _fail(reason: str) -> BodyMismatch:
    exchange = CURRENT.get()
    if exchange is not None:
        exchange.record_failure(IoFailure("body", "unavailable"))
    return BodyMismatch(reason)


class VerifiedBody:
    """Opens the source before the request starts (a missing artifact is then NOT_STARTED) and
    yields its bytes while checking them."""

    def __init__(self, source: BodySource) -> None:
        self.length = source.length
        self._digest = source.digest
        try:
            self._chunks = iter(source.chunks())
            self._pending: bytes | None = self._next()
        except BodyMismatch:
            raise
        except Exception:
            raise BodyMismatch("source_failed") from None
        self._hash = hashlib.sha256()
        self._seen = 0

    def _next(self) -> bytes | None:
        for chunk in self._chunks:
            if chunk:
                return bytes(chunk)
        return None

    def __iter__(self) -> Iterator[bytes]:
        pending = self._pending
        self._pending = None
        if pending is None:
            self._finish()
        while pending is not None:
            self._account(pending)
            try:
                following = self._next()
            except BodyMismatch:
                raise
            except Exception:
                raise _fail("source_failed") from None
            if following is None:
                self._finish()
            yield pending
            pending = following

    def _account(self, chunk: bytes) -> None:
        self._seen += len(chunk)
        if self._seen > self.length:
            raise _fail("longer_than_sealed")
        self._hash.update(chunk)

    def _finish(self) -> None:
        if self._seen != self.length:
            raise _fail("shorter_than_sealed")
        if "sha256:" + self._hash.hexdigest() != self._digest:
            raise _fail("digest_mismatch")
