"""Streaming sealer: one child's rows from the frozen parent -> its immutable payload artifact.

Per child, in one pass and bounded memory (1 MiB chunks): read the child's byte range of the
parent rows artifact, verifying every day against the parent's per-day digest; frame it (CSV
BOM/header, JSON ``[`` ``,`` ``]``); gzip it at the profile's level (pinned implementation,
mtime 0); scan it for the multipart boundary; publish it create-if-absent; measure rows,
decoded bytes and wire bytes over the COMPLETE emitted body (boundaries, part headers, CRLFs,
file bytes); compute the receiver summary the profile's verification expects
(sink/payload/expected_summary.py); then publish the ``restproof.rest_payload.v1`` manifest. No payload is ever held
whole in memory, and the same parent, child and profile always give the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from sink.artifacts.documents import put_document
from sink.artifacts.port import ArtifactCorrupt, ImmutableArtifactPort
from sink.canonical import hash_fields
from sink.contracts.planning import ChildMeasurement
from sink.contracts.source import SourceError
from sink.payload.body import PAYLOAD_SCHEMA_ID
from sink.payload.compression import DEFAULT_IMPLEMENTATION, codec_identity, gzip_stream
from sink.payload.encoding import RowEncoder
from sink.payload.expected_summary import ExpectedSummaries
from sink.payload.multipart import (
    MAX_BOUNDARY_ATTEMPTS,
    BoundaryScanner,
    boundary_candidate,
    collides_with_parts,
    frame,
)
from sink.payload.parent import FrozenParent
from sink.payload.rendering import RenderedRequest

SEALER_VERSION = "restproof.sealer.v1"
DECODED_DIGEST_KIND = "restproof.decoded_content.v1"
_SCANNED_CANDIDATES = 2


@dataclass(frozen=True, slots=True)
class ChildSpec:
    ordinal: int
    scope_from: date
    scope_to: date
    row_start: int
    row_end: int
    delivery_key: str
    receiver_mutation_key: str
    rendered: RenderedRequest


@dataclass(frozen=True, slots=True)
class SealedChild:
    spec: ChildSpec
    rows: int
    decoded_bytes: int
    decoded_digest: str
    payload_digest: str
    payload_bytes: int
    wire_digest: str
    wire_bytes: int
    content_type: str
    boundary: str | None
    manifest_ref: str
    expected_summary_digest: str | None = None

    def measurement(self) -> ChildMeasurement:
        return ChildMeasurement(rows=self.rows, decoded_bytes=self.decoded_bytes, wire_bytes=self.wire_bytes)


class PayloadCodecPort(Protocol):
    def identity(self) -> dict[str, object]: ...

    def seal(self, child: ChildSpec) -> SealedChild: ...


class _Meter:
    """Counts a stream as it passes."""

    def __init__(self) -> None:
        self.bytes = 0

    def count(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            self.bytes += len(chunk)
            yield chunk


class StreamingSealer:
    def __init__(self, store: ImmutableArtifactPort, parent: FrozenParent, encoder: RowEncoder, *,
                 implementation: str = DEFAULT_IMPLEMENTATION, summary_scheme: str | None = None) -> None:
        """``summary_scheme``: the digest scheme of the profile's ``verification.summary``, if any."""
        self._store = store
        self._summaries = ExpectedSummaries(store, parent, encoder, summary_scheme)
        self._parent = parent
        self._encoder = encoder
        self._encoding = encoder.encoding
        self._implementation = implementation
        self._compression = (codec_identity(self._encoding.gzip_level, implementation)
                             if self._encoding.compression == "gzip" else None)

    def identity(self) -> dict[str, object]:
        return {"sealer_version": SEALER_VERSION, "encoding": self._encoding.canonical(),
                "compression": self._compression}

    # ----- streams -----------------------------------------------------------------------------
    def _rows(self, child: ChildSpec) -> Iterator[bytes]:
        for day in self._parent.day_range(child.scope_from, child.scope_to):
            hasher = hashlib.sha256()
            for chunk in self._store.read_range(self._parent.rows_ref, day.byte_start,
                                                day.byte_start + day.decoded_bytes):
                hasher.update(chunk)
                yield chunk
            if "sha256:" + hasher.hexdigest() != day.digest:
                raise ArtifactCorrupt(f"day {day.day.isoformat()} of parent {self._parent.digest} is corrupt")

    def _decoded(self, child: ChildSpec) -> Iterator[bytes]:
        yield self._encoder.prefix()
        if self._encoder.rows_are_comma_joined:
            # Stored rows end in "\n" (never inside JSON text): join them with "," and drop the last.
            held = b""
            for chunk in self._rows(child):
                joined = held + chunk.replace(b"\n", b",")
                held = joined[-1:]
                yield joined[:-1]
            if held not in (b",", b""):
                raise ArtifactCorrupt("a stored JSON row does not end with a newline")
        else:
            yield from self._rows(child)
        yield self._encoder.suffix()

    # ----- sealing -----------------------------------------------------------------------------
    def decoded_content_digest(self, child: ChildSpec) -> str:
        """Digest of the decoded body, built from the parent's per-day digests (which every read
        verifies) instead of a second SHA-256 pass over the same bytes: the sealer's largest
        avoidable cost after deflate itself."""
        return hash_fields(DECODED_DIGEST_KIND, {
            "prefix": hashlib.sha256(self._encoder.prefix()).hexdigest(),
            "days": [day.digest for day in self._parent.day_range(child.scope_from, child.scope_to)],
            "row_join": "comma" if self._encoder.rows_are_comma_joined else "concatenate",
            "suffix": hashlib.sha256(self._encoder.suffix()).hexdigest(),
        })

    def seal(self, child: ChildSpec) -> SealedChild:
        decoded = _Meter()
        stream: Iterable[bytes] = decoded.count(self._decoded(child))
        if self._encoding.compression == "gzip":
            stream = gzip_stream(stream, self._encoding.gzip_level, self._implementation)
        rendered = child.rendered
        candidates = [boundary_candidate(child.receiver_mutation_key, k) for k in range(_SCANNED_CANDIDATES)]
        scanner = BoundaryScanner(candidates)
        optimistic = candidates[0] if rendered.multipart else None
        prefix, suffix = frame(rendered, optimistic) if optimistic is not None else (b"", b"")
        wire = hashlib.sha256(prefix)

        def scanned(chunks: Iterable[bytes]) -> Iterator[bytes]:
            for chunk in chunks:
                scanner.feed(chunk)
                wire.update(chunk)
                yield chunk

        # Without multipart framing the wire body IS the payload: the store's own digest is its digest.
        payload = self._store.put(scanned(stream) if rendered.multipart else stream)
        boundary = None
        if rendered.multipart:
            boundary = self._choose_boundary(child, scanner, candidates, payload.digest)
            if boundary != optimistic:
                prefix, suffix = frame(rendered, boundary)
                wire = hashlib.sha256(prefix)
                for chunk in self._store.open(payload.digest).chunks():
                    wire.update(chunk)
        wire.update(suffix)
        wire_digest = "sha256:" + wire.hexdigest() if rendered.multipart else payload.digest
        wire_bytes = len(prefix) + payload.length + len(suffix)
        days = self._parent.day_range(child.scope_from, child.scope_to)
        rows = sum(day.rows for day in days)
        decoded_digest = self.decoded_content_digest(child)
        content_type = rendered.content_type(boundary)
        summary = self._summaries.digest(days)
        expected = {} if summary is None else {
            "expected_summary": {"scheme": self._summaries.scheme, "rows": rows, "content_digest": summary}}
        manifest = put_document(self._store, {
            "schema_id": PAYLOAD_SCHEMA_ID,
            "producer_version": SEALER_VERSION,
            "refs": [payload.digest, self._parent.digest],
            "parent": self._parent.digest,
            "scope": {"bounds": "[)", "from": child.scope_from.isoformat(), "to": child.scope_to.isoformat()},
            "row_interval": [child.row_start, child.row_end],
            "rows": rows,
            "delivery_key": child.delivery_key,
            "receiver_mutation_key": child.receiver_mutation_key,
            "decoded": {"bytes": decoded.bytes, "content_digest": decoded_digest, "digest_kind": DECODED_DIGEST_KIND},
            "payload": {"bytes": payload.length, "digest": payload.digest},
            "wire": {"bytes": wire_bytes, "digest": wire_digest, "content_type": content_type,
                     "content_encoding": rendered.content_encoding},
            "framing": {"prefix": prefix.decode("utf-8"), "suffix": suffix.decode("utf-8"), "boundary": boundary},
            "request": {
                "method": rendered.method,
                "path_and_query": rendered.path_and_query,
                "headers": [list(pair) for pair in rendered.headers],
                "scalar_parts": [list(pair) for pair in rendered.scalar_parts],
                "payload_part_name": rendered.payload_part_name,
                "filename": rendered.filename,
                "part_content_type": rendered.part_content_type,
            },
            "codec": self.identity(),
            **expected,
        })
        return SealedChild(child, rows, decoded.bytes, decoded_digest, payload.digest, payload.length, wire_digest,
                           wire_bytes, content_type, boundary, manifest.digest, summary)

    def _choose_boundary(self, child: ChildSpec, scanner: BoundaryScanner, candidates: list[str],
                         payload_digest: str) -> str:
        for index, candidate in enumerate(candidates):
            if index not in scanner.hits and not collides_with_parts(child.rendered, candidate):
                return candidate
        # Both scanned candidates occur in the payload: re-scan the stored bytes for later ones.
        for attempt in range(_SCANNED_CANDIDATES, MAX_BOUNDARY_ATTEMPTS):
            candidate = boundary_candidate(child.receiver_mutation_key, attempt)
            if collides_with_parts(child.rendered, candidate):
                continue
            rescan = BoundaryScanner([candidate])
            for chunk in self._store.open(payload_digest).chunks():
                rescan.feed(chunk)
            if not rescan.hits:
                return candidate
        raise SourceError("payload.boundary_exhausted", "no multipart boundary candidate is absent from the parts")
