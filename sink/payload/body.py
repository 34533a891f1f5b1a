"""The sealed wire body of one child, streamed from the artifact store as a ``BodySource``.

For a multipart request the stored payload artifact holds the file part's bytes and the payload
manifest the framing around them (text: boundaries, part headers, scalar values); the wire body
is framing prefix + payload + framing suffix, and its digest — measured at sealing over the
complete emitted body — is re-verified while streaming. The last chunk is withheld until the
digest matches, so a corrupted artifact never produces a complete request body.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from sink.artifacts.documents import read_document
from sink.artifacts.port import ArtifactCorrupt, ImmutableArtifactPort

PAYLOAD_SCHEMA_ID = "restproof.rest_payload.v1"


class WireBody:
    def __init__(self, store: ImmutableArtifactPort, manifest: dict[str, Any]) -> None:
        self._store = store
        wire = manifest["wire"]
        framing = manifest["framing"]
        self._length = int(wire["bytes"])
        self._digest = str(wire["digest"])
        self._payload = str(manifest["payload"]["digest"])
        self._prefix = str(framing["prefix"]).encode("utf-8")
        self._suffix = str(framing["suffix"]).encode("utf-8")
        self.content_type = str(wire["content_type"])
        self.content_encoding: str | None = wire.get("content_encoding")

    @classmethod
    def load(cls, store: ImmutableArtifactPort, payload_ref: str) -> WireBody:
        return cls(store, read_document(store, payload_ref, PAYLOAD_SCHEMA_ID))

    @property
    def length(self) -> int:
        return self._length

    @property
    def digest(self) -> str:
        return self._digest

    def chunks(self) -> Iterator[bytes]:
        hasher = hashlib.sha256()
        seen = 0
        pending: bytes | None = None
        parts: list[Iterator[bytes]] = [iter((self._prefix,)), self._store.open(self._payload).chunks(),
                                        iter((self._suffix,))]
        for part in parts:
            for chunk in part:
                if not chunk:
                    continue
                hasher.update(chunk)
                seen += len(chunk)
                if pending is not None:
                    yield pending
                pending = chunk
        if seen != self._length or "sha256:" + hasher.hexdigest() != self._digest:
            raise ArtifactCorrupt(f"wire body {self._digest} does not match its sealed bytes")
        if pending is not None:
            yield pending
