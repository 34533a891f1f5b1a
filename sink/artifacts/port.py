"""ImmutableArtifactPort: content-addressed, create-if-absent, digest verified on every read.

Seed: "Artifacts and evidence" ("Publication is create-if-absent and digest verified; overwriting
evidence is forbidden") and "Frozen source boundary" ("Artifacts are published create-if-absent
before the transaction ... unreferenced artifacts are safe GC orphans").

An artifact's name IS its digest (``sha256:<hex>`` of its bytes), so publishing the same bytes
twice is a no-op and two different byte strings can never share a name. Every operation maps
onto an object store (S3 API): ``put`` = PutObject with ``If-None-Match: *`` after a streaming
upload, ``open`` = GetObject, ``list_refs`` = ListObjectsV2, roots = small named objects.
Callers depend on this protocol only, so an object-storage adapter can follow unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

DEFAULT_CHUNK_BYTES = 1 << 20


class ArtifactError(Exception):
    """Base of artifact-store failures; ``code`` is stable, messages carry digests only."""

    code = "artifact.error"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code}: {message}")


class ArtifactMissing(ArtifactError):
    code = "artifact.missing"


class ArtifactCorrupt(ArtifactError):
    """Stored bytes no longer match their name: never hand them on."""

    code = "artifact.corrupt"


class ArtifactConflict(ArtifactError):
    """Create-if-absent found different content under a name, or bytes differ from the expected digest."""

    code = "artifact.conflict"


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    digest: str
    length: int
    created: bool
    """True when this call published the bytes; False when they were already there."""


@runtime_checkable
class ArtifactReader(Protocol):
    """A stored artifact, streamed. Satisfies ``sink.contracts.transport.BodySource``."""

    @property
    def length(self) -> int: ...

    @property
    def digest(self) -> str: ...

    def chunks(self) -> Iterator[bytes]:
        """Bounded chunks; the last one is withheld and ``ArtifactCorrupt`` raised when the
        bytes do not match the name, so a corrupt body never reaches its end."""


@runtime_checkable
class ImmutableArtifactPort(Protocol):
    def put(self, chunks: Iterable[bytes], *, expected_digest: str | None = None) -> ArtifactRef:
        """Stream bytes in; publish them durably under their digest if absent."""

    def put_bytes(self, data: bytes) -> ArtifactRef: ...

    def open(self, digest: str) -> ArtifactReader:
        """``ArtifactMissing`` when absent."""

    def read_range(self, digest: str, start: int, end: int) -> Iterator[bytes]:
        """Bytes [start, end) in bounded chunks (a ranged GET), NOT verified: the caller checks
        them against a digest of that range it already holds (the parent's per-day digests)."""

    def exists(self, digest: str) -> bool: ...

    def list_refs(self) -> Iterator[str]:
        """Every stored digest (order unspecified)."""

    def age_seconds(self, digest: str) -> float:
        """Seconds since the artifact was published (gc grace period)."""

    def put_root(self, name: str, digest: str) -> None:
        """Create-if-absent named pointer to an artifact (a gc root). A different existing
        target is ``ArtifactConflict``."""

    def roots(self) -> Iterator[tuple[str, str]]:
        """(name, digest) of every root."""
