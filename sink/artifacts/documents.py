"""Canonical JSON documents stored as artifacts (manifests, plans, topologies).

Canonical JSON: sorted keys, UTF-8, no insignificant whitespace, no floats. A document that
points at other artifacts lists their digests under ``refs``: the garbage collector follows
exactly that list, so a referenced artifact can never be reported as an orphan.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from sink.artifacts.port import ArtifactCorrupt, ArtifactRef, ImmutableArtifactPort

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024


def _check_no_float(value: object, depth: int = 0) -> None:
    if depth > 64:
        raise ValueError("document nested too deeply")
    if isinstance(value, float):
        raise TypeError("floats are not canonical: use an integer or a decimal string")
    if isinstance(value, Mapping):
        for item in value.values():
            _check_no_float(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_no_float(item, depth + 1)


def canonical_json(document: Mapping[str, Any]) -> bytes:
    _check_no_float(document)
    return json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def put_document(store: ImmutableArtifactPort, document: Mapping[str, Any]) -> ArtifactRef:
    if not isinstance(document.get("schema_id"), str):
        raise ValueError("a stored document names its schema_id")
    return store.put_bytes(canonical_json(document))


def read_document(store: ImmutableArtifactPort, digest: str, schema_id: str | None = None) -> dict[str, Any]:
    reader = store.open(digest)
    if reader.length > MAX_DOCUMENT_BYTES:
        raise ArtifactCorrupt(f"{digest} is larger than a document may be")
    data = b"".join(reader.chunks())
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ArtifactCorrupt(f"{digest} is not a canonical JSON document") from None
    if not isinstance(document, dict):
        raise ArtifactCorrupt(f"{digest} is not a JSON object")
    if schema_id is not None and document.get("schema_id") != schema_id:
        raise ArtifactCorrupt(f"{digest} is not a {schema_id} document")
    return cast(dict[str, Any], document)


def document_refs(data: bytes) -> tuple[str, ...]:
    """The ``refs`` a stored document declares; () for anything that is not such a document."""
    if not data.startswith(b"{") or len(data) > MAX_DOCUMENT_BYTES:
        return ()
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return ()
    refs = document.get("refs") if isinstance(document, dict) else None
    if not isinstance(refs, list):
        return ()
    return tuple(ref for ref in refs if isinstance(ref, str))
