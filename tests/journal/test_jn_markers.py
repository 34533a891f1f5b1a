"""MAY_ATTEMPT markers: create-if-absent, immutable, and orphans reported as possible remote effect."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import queue
import time
from pathlib import Path

import pytest
from conftest import JournalEnv
from jn_builders import CAPACITY, NAMESPACE, digest, publish_marker, seal, submit, week_parent
from jn_marker_race import race_create

from sink.journal.ids import operation_id_for
from sink.journal.markers import FileMarkerStore, MarkerConflict, MayAttemptMarker, UnreadableMarker, namespace_key
from sink.journal.port import CapacityExhausted
from sink.journal.records import (
    GenerationKey,
)

pytestmark = pytest.mark.timeout(240)


def _marker(ordinal: int = 1, *, revision: int = 1, created: str = "2026-09-01T00:00:00Z") -> MayAttemptMarker:
    return MayAttemptMarker(
        operation_namespace=NAMESPACE, operation_id=operation_id_for(NAMESPACE, "k"), parent_id="op_parent",
        delivery_key="k", attempt_ordinal=ordinal, generation=GenerationKey("2026-09-01T00:00:00Z"),
        expected_revision=revision, journal_epoch=1, mutation_intent_digest=digest("intent"),
        created_at_utc=created,
    )


def test_marker_is_created_once_and_bound_to_its_bytes(tmp_path: Path) -> None:
    store = FileMarkerStore(tmp_path)
    first = store.create_if_absent(_marker())
    again = store.create_if_absent(_marker(created="2026-09-01T00:05:00Z"))  # re-publish after a crash

    assert first.created is True and again.created is False
    assert again.digest == first.digest
    assert again.marker.created_at_utc == "2026-09-01T00:00:00Z"  # the original is never rewritten
    files = [p for p in tmp_path.rglob("*.json")]
    assert len(files) == 1
    assert first.digest == "sha256:" + hashlib.sha256(files[0].read_bytes()).hexdigest()
    assert not os.access(files[0], os.W_OK) or os.geteuid() == 0  # published read-only (root ignores modes)
    assert files[0].stat().st_mode & 0o222 == 0


def test_marker_with_another_binding_conflicts(tmp_path: Path) -> None:
    store = FileMarkerStore(tmp_path)
    store.create_if_absent(_marker(revision=1))
    with pytest.raises(MarkerConflict):
        store.create_if_absent(_marker(revision=2))
    assert store.get(NAMESPACE, operation_id_for(NAMESPACE, "k"), 1).marker.expected_revision == 1  # type: ignore[union-attr]


def test_concurrent_publishers_create_exactly_one_marker(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(6), ctx.Queue()
    procs = [ctx.Process(target=race_create, args=(str(tmp_path), barrier, out)) for _ in range(6)]
    for p in procs:
        p.start()
    results = []
    deadline = time.monotonic() + 150
    while len(results) < len(procs):
        try:
            results.append(out.get(timeout=0.5))
        except queue.Empty:
            died = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            assert not died, f"a publisher died before publishing (exit codes {died})"
            assert time.monotonic() < deadline, "the publishers did not all publish in time"
    for p in procs:
        p.join(timeout=30)
    assert sum(created for created, _ in results) == 1
    assert len({d for _, d in results}) == 1


def test_unreadable_marker_is_still_listed(tmp_path: Path) -> None:
    store = FileMarkerStore(tmp_path)
    bad = tmp_path / namespace_key(NAMESPACE) / "op_x" / "0000000001.json"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"{truncated")
    entries = list(store.scan())
    assert len(entries) == 1 and isinstance(entries[0], UnreadableMarker)
    assert (entries[0].operation_id, entries[0].attempt_ordinal) == ("op_x", 1)


def test_orphan_marker_is_reported_until_its_attempt_exists(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 1)
    a, b = [seal(env.journal, c) for c in env.journal.admit_parent(week_parent("route-1")).children[:2]]
    submit(env.journal, env.markers, a)
    with pytest.raises(CapacityExhausted):
        submit(env.journal, env.markers, b)  # marker published, journal transaction refused

    orphans = env.journal.find_orphan_markers(NAMESPACE)
    assert [(o.operation_id, o.attempt_ordinal) for o in orphans] == [(b.operation_id, 1)]
    assert "possible remote effect" in orphans[0].reason
    assert env.journal.find_orphan_markers("ns:some-other-namespace") == ()

    env.journal.configure_capacity(CAPACITY, 2)
    granted = submit(env.journal, env.markers, b)  # the same binding is reused, not re-created
    assert granted.attempt.marker_digest == orphans[0].marker_digest
    assert env.journal.find_orphan_markers(NAMESPACE) == ()


def test_marker_from_a_rewound_journal_is_reported(journal_env: JournalEnv) -> None:
    """A marker whose attempt the journal no longer has (e.g. after restore) is never permission."""
    env = journal_env
    op = seal(env.journal, env.journal.admit_parent(week_parent("route-1")).children[0])
    publish_marker(env.journal, env.markers, op, ordinal=3)  # as if attempts 1-3 existed before a restore
    orphans = env.journal.find_orphan_markers()
    assert [(o.operation_id, o.attempt_ordinal) for o in orphans] == [(op.operation_id, 3)]
