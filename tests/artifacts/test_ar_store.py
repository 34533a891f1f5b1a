"""Local content-addressed store: create-if-absent, verified reads, conflicts, gc roots."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from sink.artifacts import (
    ArtifactConflict,
    ArtifactCorrupt,
    ArtifactMissing,
    LocalArtifactStore,
    collect,
    put_document,
    read_document,
    root_name,
)
from sink.contracts.transport import BodySource


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_put_is_content_addressed_and_idempotent(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path, chunk_bytes=4)
    first = store.put([b"hello ", b"world"])
    again = store.put_bytes(b"hello world")
    assert first.digest == again.digest == _digest(b"hello world")
    assert (first.created, again.created) == (True, False)
    reader = store.open(first.digest)
    assert isinstance(reader, BodySource)
    assert reader.length == 11
    assert b"".join(reader.chunks()) == b"hello world"
    assert list(store.list_refs()) == [first.digest]
    assert not list((tmp_path / "tmp").iterdir())


def test_empty_artifact_round_trips(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    ref = store.put([])
    assert b"".join(store.open(ref.digest).chunks()) == b""


def test_expected_digest_mismatch_publishes_nothing(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    with pytest.raises(ArtifactConflict):
        store.put([b"abc"], expected_digest=_digest(b"abd"))
    assert list(store.list_refs()) == []


def _corrupt(store: LocalArtifactStore, digest: str, data: bytes) -> None:
    path = store.open(digest).path
    os.chmod(path, 0o644)
    path.write_bytes(data)


def test_corrupt_bytes_are_refused_before_the_last_chunk(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path, chunk_bytes=4)
    ref = store.put_bytes(b"0123456789")
    _corrupt(store, ref.digest, b"0123456780")
    seen: list[bytes] = []
    with pytest.raises(ArtifactCorrupt):
        seen.extend(store.open(ref.digest).chunks())
    assert b"".join(seen) == b"01234567"  # the final chunk was withheld


def test_truncated_artifact_is_corrupt(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    ref = store.put_bytes(b"abc")
    _corrupt(store, ref.digest, b"")
    with pytest.raises(ArtifactCorrupt):
        list(store.open(ref.digest).chunks())


def test_existing_object_with_other_bytes_is_a_conflict(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    ref = store.put_bytes(b"abc")
    _corrupt(store, ref.digest, b"xyz")
    with pytest.raises(ArtifactConflict):
        store.put_bytes(b"abc")


def test_missing_artifact(tmp_path: Path) -> None:
    with pytest.raises(ArtifactMissing):
        LocalArtifactStore(tmp_path).open(_digest(b"nothing"))


def test_roots_are_create_if_absent(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    a, b = store.put_bytes(b"a").digest, store.put_bytes(b"b").digest
    store.put_root("parent-x", a)
    store.put_root("parent-x", a)
    with pytest.raises(ArtifactConflict):
        store.put_root("parent-x", b)
    assert list(store.roots()) == [("parent-x", a)]


def test_gc_follows_document_refs_and_drops_unadmitted_roots(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    payload = store.put_bytes(b"rows").digest
    nested = put_document(store, {"schema_id": "t.v1", "refs": [payload]}).digest
    top = put_document(store, {"schema_id": "t.v1", "parent_plan_digest": "P1", "refs": [nested]}).digest
    orphan = store.put_bytes(b"orphan").digest
    pending_payload = store.put_bytes(b"pending").digest
    pending = put_document(store, {"schema_id": "t.v1", "parent_plan_digest": "P0", "refs": [pending_payload]}).digest
    retried_payload = store.put_bytes(b"retried").digest
    retried = put_document(store, {"schema_id": "t.v1", "parent_plan_digest": "P2", "refs": [retried_payload]}).digest
    store.put_root(root_name("admitted", top), top)
    store.put_root(root_name("admitted", retried), retried)  # a second topology of the same parent
    store.put_root(root_name("crashed", pending), pending)
    plans = {"admitted": "P1"}
    report = collect(store, admitted_plan_digest=plans.get, grace_seconds=0)
    assert set(report.live) == {payload, nested, top}
    assert set(report.unreferenced) == {orphan, pending_payload, pending, retried_payload, retried}
    assert report.dead_roots == tuple(sorted([root_name("admitted", retried), root_name("crashed", pending)]))
    young = collect(store, admitted_plan_digest=plans.get, grace_seconds=3600)
    assert young.unreferenced == () and set(young.young) == set(report.unreferenced)


def test_documents_are_canonical_and_schema_checked(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    one = put_document(store, {"schema_id": "t.v1", "b": 1, "a": "Ж"})
    two = put_document(store, {"a": "Ж", "b": 1, "schema_id": "t.v1"})
    assert one.digest == two.digest
    assert read_document(store, one.digest, "t.v1")["a"] == "Ж"
    with pytest.raises(ArtifactCorrupt):
        read_document(store, one.digest, "other.v1")
    with pytest.raises(TypeError):
        put_document(store, {"schema_id": "t.v1", "x": 1.5})
