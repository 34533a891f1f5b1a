"""InMemoryArtifactStore: the ``ImmutableArtifactPort`` contract held in a dict.

Same rules as ``sink.artifacts.local.LocalArtifactStore`` (names are digests, create-if-absent,
a conflicting root refused, every read re-verified, ranges bounds-checked), none of its
durability: for unit tests of code that takes the port. ``corrupt`` lets a test damage stored
bytes to show that the code under test stops on ``ArtifactCorrupt``.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Iterator

from sink.artifacts.port import (
    DEFAULT_CHUNK_BYTES,
    ArtifactConflict,
    ArtifactCorrupt,
    ArtifactMissing,
    ArtifactRef,
)

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}\Z")
_ROOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")


def _check_digest(digest: str) -> None:
    if not _DIGEST.fullmatch(digest):
        raise ValueError("an artifact name is sha256:<64 lowercase hex>")


def _digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class MemoryArtifact:
    """One stored object; ``chunks()`` re-verifies its bytes against its name on every read and
    withholds the last chunk when they differ, as the local store does."""

    def __init__(self, data: bytes, digest: str, chunk_bytes: int) -> None:
        self._data = data
        self._digest = digest
        self._chunk_bytes = chunk_bytes

    @property
    def length(self) -> int:
        return len(self._data)

    @property
    def digest(self) -> str:
        return self._digest

    def chunks(self) -> Iterator[bytes]:
        pieces = [self._data[i:i + self._chunk_bytes] for i in range(0, len(self._data), self._chunk_bytes)]
        if _digest_of(self._data) != self._digest:
            yield from pieces[:-1]
            raise ArtifactCorrupt(f"{self._digest} does not match its stored bytes")
        yield from pieces


class InMemoryArtifactStore:
    def __init__(self, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES, clock: Callable[[], float] = time.time) -> None:
        """``clock`` (seconds) dates each publication, so gc grace periods can be tested without sleeping."""
        if chunk_bytes < 1:
            raise ValueError("chunk_bytes must be positive")
        self._chunk_bytes = chunk_bytes
        self._clock = clock
        self._objects: dict[str, bytes] = {}
        self._published_at: dict[str, float] = {}
        self._roots: dict[str, str] = {}

    def put(self, chunks: Iterable[bytes], *, expected_digest: str | None = None) -> ArtifactRef:
        data = b"".join(chunks)
        digest = _digest_of(data)
        if expected_digest is not None and digest != expected_digest:
            raise ArtifactConflict(f"bytes hash to {digest}, expected {expected_digest}")
        stored = self._objects.get(digest)
        if stored is not None:
            if stored != data:  # only after ``corrupt``: never hand on or overwrite evidence
                raise ArtifactConflict(f"{digest} already exists with different bytes")
            return ArtifactRef(digest, len(data), created=False)
        self._objects[digest] = data
        self._published_at[digest] = self._clock()
        return ArtifactRef(digest, len(data), created=True)

    def put_bytes(self, data: bytes) -> ArtifactRef:
        return self.put([data])

    def open(self, digest: str) -> MemoryArtifact:
        _check_digest(digest)
        try:
            data = self._objects[digest]
        except KeyError:
            raise ArtifactMissing(f"{digest} is not stored") from None
        return MemoryArtifact(data, digest, self._chunk_bytes)

    def read_range(self, digest: str, start: int, end: int) -> Iterator[bytes]:
        reader = self.open(digest)
        if not 0 <= start <= end <= reader.length:
            raise ArtifactCorrupt(f"range {start}..{end} lies outside {digest}")
        data = self._objects[digest]
        for offset in range(start, end, self._chunk_bytes):
            yield data[offset:min(offset + self._chunk_bytes, end)]

    def exists(self, digest: str) -> bool:
        _check_digest(digest)
        return digest in self._objects

    def list_refs(self) -> Iterator[str]:
        yield from sorted(self._objects)

    def age_seconds(self, digest: str) -> float:
        self.open(digest)  # ArtifactMissing for an absent name
        return max(0.0, self._clock() - self._published_at[digest])

    def put_root(self, name: str, digest: str) -> None:
        if not _ROOT_NAME.fullmatch(name):
            raise ValueError("a root name is 1-200 characters of A-Z a-z 0-9 . _ -")
        _check_digest(digest)
        existing = self._roots.setdefault(name, digest)
        if existing != digest:
            raise ArtifactConflict(f"root {name} already points elsewhere")

    def roots(self) -> Iterator[tuple[str, str]]:
        yield from sorted(self._roots.items())

    def corrupt(self, digest: str, data: bytes) -> None:
        """Replace stored bytes behind the store's back (a damaged disk, a tampering operator)."""
        self.open(digest)
        self._objects[digest] = data
