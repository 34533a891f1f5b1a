"""The MAY_ATTEMPT marker must bind the exact attempt, field by field (issue 14).

The critical submit compares the published marker with the journal row and the request on every
bound field; each test below publishes a marker that differs in ONE field only (through the
marker store every adapter reads) and expects MARKER_MISMATCH with nothing written, on both
adapters. A marker that binds every field is accepted (the control case).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import JournalEnv
from jn_builders import CAPACITY, WORKER, digest, seal, take_lease, week_parent

from sink.contracts.state import ExecutionState
from sink.journal.markers import FileMarkerStore, MayAttemptMarker, StoredMarker, UnreadableMarker, namespace_key
from sink.journal.port import JournalRejection, RejectionReason
from sink.journal.records import (
    Actor,
    ActorKind,
    GenerationKey,
    LeaseKind,
    MarkerRetirement,
    OperationRow,
    SubmitRequest,
)
from sink.journal.sqlite.adapter import open_sqlite_journal

pytestmark = pytest.mark.timeout(60)


def _sealed(env: JournalEnv) -> OperationRow:
    env.journal.configure_capacity(CAPACITY, 4)
    op = seal(env.journal, env.journal.admit_parent(week_parent("bound")).children[0])
    take_lease(env.journal, LeaseKind.MUTATION, op.operation_id)
    return op


def _marker(env: JournalEnv, op: OperationRow) -> MayAttemptMarker:
    return MayAttemptMarker(
        operation_namespace=op.operation_namespace, operation_id=op.operation_id, parent_id=op.parent_id,
        delivery_key=op.delivery_key, attempt_ordinal=1, generation=op.descriptor.generation,
        expected_revision=op.revision, journal_epoch=env.journal.gate_status().journal_epoch,
        mutation_intent_digest=op.descriptor.mutation_intent_digest,
        created_at_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def _reserve(env: JournalEnv, op: OperationRow, marker_digest: str) -> Any:
    return env.journal.reserve_and_mark_submitting(SubmitRequest(
        op.operation_id, op.revision, 1, marker_digest, WORKER, CAPACITY))


def test_a_marker_binding_every_field_is_accepted(journal_env: JournalEnv) -> None:
    env = journal_env
    op = _sealed(env)
    stored = env.markers.create_if_absent(_marker(env, op))
    assert _reserve(env, op, stored.digest).operation.axes.execution_state is ExecutionState.SUBMITTING


@pytest.mark.parametrize(("field", "value"), [
    ("parent_id", "par_" + "0" * 40),
    ("delivery_key", "other-delivery-key"),
    ("generation", GenerationKey("2026-09-02T00:00:00Z", 0)),
    ("mutation_intent_digest", digest("another intent")),
    ("expected_revision", 99),
    ("journal_epoch", 7),
])
def test_a_marker_differing_in_one_bound_field_is_refused(journal_env: JournalEnv, field: str, value: Any) -> None:
    env = journal_env
    op = _sealed(env)
    stored = env.markers.create_if_absent(replace(_marker(env, op), **{field: value}))
    with pytest.raises(JournalRejection) as caught:
        _reserve(env, op, stored.digest)
    assert caught.value.reason is RejectionReason.MARKER_MISMATCH
    assert env.journal.get_operation(op.operation_id) == op
    assert env.journal.list_attempts(op.operation_id) == ()
    assert env.journal.capacity_status(CAPACITY).held_by_attempts == ()


def test_the_request_must_name_the_published_marker_digest(journal_env: JournalEnv) -> None:
    env = journal_env
    op = _sealed(env)
    env.markers.create_if_absent(_marker(env, op))
    with pytest.raises(JournalRejection) as caught:
        _reserve(env, op, digest("a digest nobody published"))
    assert caught.value.reason is RejectionReason.MARKER_MISMATCH
    assert env.journal.list_attempts(op.operation_id) == ()


def test_submit_without_a_published_marker_is_refused_as_missing(journal_env: JournalEnv) -> None:
    env = journal_env
    op = _sealed(env)
    with pytest.raises(JournalRejection) as caught:
        _reserve(env, op, digest("never published"))
    assert caught.value.reason is RejectionReason.MARKER_MISSING


# --- orphan report: the reason is evidence text, stable ---------------------------------------------


def test_orphan_reasons_are_stable_evidence_strings(journal_env: JournalEnv) -> None:
    env = journal_env
    op = _sealed(env)
    env.markers.create_if_absent(_marker(env, op))  # published, never submitted
    orphans = env.journal.find_orphan_markers()
    assert [(o.operation_id, o.reason) for o in orphans] == [
        (op.operation_id, "no journal attempt for this marker: possible remote effect")]


def test_a_marker_whose_journal_attempt_differs_is_reported(journal_env: JournalEnv) -> None:
    """The marker file no longer matches the attempt row (restored or rewritten store)."""
    env = journal_env
    op = _sealed(env)
    marker = _marker(env, op)
    _reserve(env, op, env.markers.create_if_absent(marker).digest)
    assert env.journal.find_orphan_markers() == ()
    path = env.markers.root / namespace_key(op.operation_namespace) / op.operation_id / f"{1:010d}.json"
    path.chmod(0o644)
    path.write_bytes(replace(marker, created_at_utc="2026-01-01T00:00:00Z").canonical_bytes())
    orphans = env.journal.find_orphan_markers()
    assert [(o.operation_id, o.reason) for o in orphans] == [
        (op.operation_id, "journal attempt differs from the marker: possible remote effect")]


# --- retirement refusals -------------------------------------------------------------------------

OPERATOR = Actor(ActorKind.OPERATOR, "oncall-1", reconciliation_id="recon-kill-1")


@pytest.mark.parametrize("field", ["marker_digest", "evidence_digest"])
def test_retirement_names_the_malformed_digest(journal_env: JournalEnv, field: str) -> None:
    env = journal_env
    op = _sealed(env)
    values = {"marker_digest": digest("m"), "evidence_digest": digest("e"), field: "not-a-digest"}
    with pytest.raises((ValueError, JournalRejection)) as caught:
        env.journal.retire_orphan_marker(MarkerRetirement(op.operation_id, 1, actor=OPERATOR, **values))
    assert re.search(rf"(^|\s){field} must be 'sha256:<64 lowercase hex>'", str(caught.value)), str(caught.value)
    assert env.journal.get_operation(op.operation_id) == op


def test_retiring_a_marker_that_was_never_published_is_refused(journal_env: JournalEnv) -> None:
    env = journal_env
    op = _sealed(env)
    with pytest.raises(JournalRejection) as caught:
        env.journal.retire_orphan_marker(MarkerRetirement(op.operation_id, 1, digest("m"), digest("e"), OPERATOR))
    assert caught.value.reason is RejectionReason.MARKER_MISSING
    assert env.journal.list_retired_markers() == ()


# --- a marker store that files a marker under the wrong key --------------------------------------


class MisfilingStore:
    """A MarkerStore whose get() answers with the marker of another key: the journal must compare
    the marker's own operation and ordinal, not trust where the store found it."""

    def __init__(self, inner: FileMarkerStore, redirect: dict[tuple[str, int], tuple[str, int]]) -> None:
        self.inner = inner
        self.redirect = redirect

    def create_if_absent(self, marker: MayAttemptMarker) -> StoredMarker:
        return self.inner.create_if_absent(marker)

    def get(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> StoredMarker | None:
        op, ordinal = self.redirect.get((operation_id, attempt_ordinal), (operation_id, attempt_ordinal))
        return self.inner.get(operation_namespace, op, ordinal)

    def scan(self) -> Iterator[StoredMarker | UnreadableMarker]:
        return self.inner.scan()


@pytest.mark.parametrize("wrong", ["operation", "ordinal"])
def test_a_misfiled_marker_never_authorises_a_submit_or_a_retirement(tmp_path: Path, wrong: str) -> None:
    inner = FileMarkerStore(tmp_path / "markers")
    store = MisfilingStore(inner, {})
    journal = open_sqlite_journal(tmp_path / "j.sqlite3", markers=store)
    try:
        journal.configure_capacity(CAPACITY, 4)
        first, second = (seal(journal, c) for c in journal.admit_parent(week_parent("misfiled", weeks=2)).children)
        take_lease(journal, LeaseKind.MUTATION, second.operation_id)
        epoch = journal.gate_status().journal_epoch
        source = first if wrong == "operation" else second
        ordinal = 1 if wrong == "operation" else 2
        published = inner.create_if_absent(MayAttemptMarker(
            operation_namespace=source.operation_namespace, operation_id=source.operation_id,
            parent_id=second.parent_id, delivery_key=second.delivery_key, attempt_ordinal=ordinal,
            generation=second.descriptor.generation, expected_revision=second.revision, journal_epoch=epoch,
            mutation_intent_digest=second.descriptor.mutation_intent_digest, created_at_utc="2026-09-01T00:00:00Z"))
        store.redirect[(second.operation_id, 1)] = (source.operation_id, ordinal)
        with pytest.raises(JournalRejection) as caught:
            journal.reserve_and_mark_submitting(SubmitRequest(
                second.operation_id, second.revision, 1, published.digest, WORKER, CAPACITY))
        assert caught.value.reason is RejectionReason.MARKER_MISMATCH
        if wrong == "operation":
            with pytest.raises(JournalRejection) as refused:
                journal.retire_orphan_marker(MarkerRetirement(
                    second.operation_id, 1, published.digest, digest("e"), OPERATOR))
            assert refused.value.reason is RejectionReason.MARKER_MISMATCH
        assert journal.list_attempts(second.operation_id) == ()
        assert journal.get_operation(second.operation_id) == second
    finally:
        journal.close()
