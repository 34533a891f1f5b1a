"""The MAY_ATTEMPT marker and its file store, rule by rule (issue 14).

The marker's bytes are its identity (the journal stores their digest), so they are pinned; each
validation and each unreadable-file case is checked on its own.
"""

from __future__ import annotations

import json
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sink.journal.markers import FileMarkerStore, MayAttemptMarker, StoredMarker, UnreadableMarker, namespace_key
from sink.journal.records import GenerationKey

MARKER = MayAttemptMarker(
    operation_namespace="ns:tenant-a:dev:1", operation_id="op_1", parent_id="par_1", delivery_key="key-1",
    attempt_ordinal=1, generation=GenerationKey("2026-09-01T00:00:00Z", 0), expected_revision=0,
    journal_epoch=0, mutation_intent_digest="sha256:" + "ab" * 32, created_at_utc="2026-09-01T00:00:00Z",
)

GOLDEN_BYTES = (
    '{"attempt_id":"' + MARKER.attempt_id + '","attempt_ordinal":1,"created_at_utc":"2026-09-01T00:00:00Z",'
    '"delivery_key":"key-1","expected_revision":0,"format":"restproof.may-attempt.v1",'
    '"generation":{"correction_revision":0,"scheduled_interval_end_utc":"2026-09-01T00:00:00Z"},'
    '"journal_epoch":0,"mutation_intent_digest":"sha256:' + "ab" * 32 + '","operation_id":"op_1",'
    '"operation_namespace":"ns:tenant-a:dev:1","parent_id":"par_1"}'
).encode()


def test_marker_bytes_are_pinned() -> None:
    assert MARKER.canonical_bytes() == GOLDEN_BYTES


@pytest.mark.parametrize("field", ["operation_namespace", "operation_id", "parent_id", "delivery_key"])
def test_each_identifier_is_validated(field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} must be"):
        replace(MARKER, **{field: " bad id"})


def test_intent_digest_is_validated() -> None:
    with pytest.raises(ValueError, match=r"^mutation_intent_digest must be"):
        replace(MARKER, mutation_intent_digest="sha256:short")


@pytest.mark.parametrize(("field", "lowest"), [("attempt_ordinal", 1), ("expected_revision", 0), ("journal_epoch", 0)])
def test_counters_have_their_lower_bound(field: str, lowest: int) -> None:
    assert getattr(replace(MARKER, **{field: lowest}), field) == lowest
    with pytest.raises(ValueError, match=field):
        replace(MARKER, **{field: lowest - 1})


def test_store_creates_its_root_and_publishes_read_only(tmp_path: Path) -> None:
    store = FileMarkerStore(tmp_path / "deep" / "markers")
    stored = store.create_if_absent(MARKER)
    assert stored.created is True
    path = store.root / namespace_key(MARKER.operation_namespace) / "op_1" / "0000000001.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    got = store.get(MARKER.operation_namespace, "op_1", 1)
    assert got == StoredMarker(MARKER, stored.digest, created=False)


def test_operation_ids_cannot_escape_their_directory(tmp_path: Path) -> None:
    store = FileMarkerStore(tmp_path)
    with pytest.raises(ValueError, match="must not contain '/'"):
        store.get(MARKER.operation_namespace, "op/../../etc", 1)
    with pytest.raises(ValueError, match=r"^operation_id must be"):
        store.get(MARKER.operation_namespace, "", 1)


def _op_dir(store: FileMarkerStore) -> Path:
    return store.root / namespace_key(MARKER.operation_namespace) / "op_1"


def test_scan_skips_temporary_files_but_not_the_markers_after_them(tmp_path: Path) -> None:
    store = FileMarkerStore(tmp_path)
    store.create_if_absent(MARKER)
    (_op_dir(store) / ".0000000001.json.123.tmp").write_bytes(b"partial")  # sorts before the marker
    scanned = list(store.scan())
    assert [(type(s).__name__, getattr(s, "created", None)) for s in scanned] == [("StoredMarker", False)]


@pytest.mark.parametrize("body", [
    b"{not json",  # ValueError
    json.dumps({"attempt_id": "x"}).encode(),  # KeyError: no format
    json.dumps({"format": "restproof.may-attempt.v1", "attempt_id": "x",
                "generation": {"scheduled_interval_end_utc": "2026-09-01T00:00:00Z", "correction_revision": 0},
                "unexpected": 1}).encode(),  # TypeError: unknown field
    json.dumps({**json.loads(GOLDEN_BYTES), "format": "restproof.may-attempt.v0"}).encode(),  # other format
])
def test_unreadable_marker_files_are_listed_not_fatal(tmp_path: Path, body: bytes) -> None:
    store = FileMarkerStore(tmp_path)
    _op_dir(store).mkdir(parents=True)
    (_op_dir(store) / "0000000002.json").write_bytes(body)
    scanned: list[Any] = list(store.scan())
    assert len(scanned) == 1 and isinstance(scanned[0], UnreadableMarker)
    assert (scanned[0].operation_id, scanned[0].attempt_ordinal) == ("op_1", 2)


def test_marker_bytes_are_ascii_whatever_the_creation_time_text() -> None:
    raw = replace(MARKER, created_at_utc="2026-09-01T00:00:00Z\u00e9").canonical_bytes()
    assert b'"created_at_utc":"2026-09-01T00:00:00Z\\u00e9"' in raw
    raw.decode("ascii")
