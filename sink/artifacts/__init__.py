"""Immutable, content-addressed artifacts: the port, the local directory store, documents, gc."""

from sink.artifacts.documents import canonical_json, put_document, read_document
from sink.artifacts.gc import GcReport, collect, root_name
from sink.artifacts.local import LocalArtifactStore, LocalFileArtifact
from sink.artifacts.port import (
    ArtifactConflict,
    ArtifactCorrupt,
    ArtifactError,
    ArtifactMissing,
    ArtifactReader,
    ArtifactRef,
    ImmutableArtifactPort,
)

__all__ = [
    "ArtifactConflict",
    "ArtifactCorrupt",
    "ArtifactError",
    "ArtifactMissing",
    "ArtifactReader",
    "ArtifactRef",
    "GcReport",
    "ImmutableArtifactPort",
    "LocalArtifactStore",
    "LocalFileArtifact",
    "canonical_json",
    "collect",
    "put_document",
    "read_document",
    "root_name",
]
