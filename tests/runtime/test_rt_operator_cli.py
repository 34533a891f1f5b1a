"""The operator commands that need no receiver, through the real CLI process on a journal prepared in
tmp_path: `inspect` is read-only, `abandon` / `transfer-capacity` / `retire-marker` /
`attest-epoch` write nothing without `--apply` and one audited record with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from sink.artifacts import LocalArtifactStore
from sink.journal.markers import FileMarkerStore, MayAttemptMarker
from sink.journal.records import Actor, ActorKind, GateState
from sink.journal.sqlite.adapter import open_sqlite_journal
from sink.preparation import prepare
from tests.payload.pl_helpers import GOLDEN_RECORDS, REPO, ListSource, bundled_plan


def _delivery(*args: str) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run([sys.executable, "-m", "sink.cli", *args, "--format", "json"], capture_output=True,
                          text=True, timeout=180, cwd=REPO, env=dict(os.environ), check=False)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.strip().splitlines()
    return done.returncode, json.loads(lines[-1]) if lines else {}, done.stderr


def _prepared(state: Path) -> tuple[str, str]:
    journal = open_sqlite_journal(state / "journal.sqlite3", markers=FileMarkerStore(state / "markers"))
    try:
        prepared = prepare(bundled_plan("measurements-sync"), date(2026, 3, 1), date(2026, 3, 4),
                           source=ListSource(GOLDEN_RECORDS), store=LocalArtifactStore(state / "artifacts"),
                           journal=journal)
    finally:
        journal.close()
    return prepared.parent_id, prepared.admitted.children[0].operation_id


def test_inspect_is_read_only_and_the_decisions_need_apply(tmp_path: Path) -> None:
    state = tmp_path / "state"
    parent, child = _prepared(state)
    journal_file = state / "journal.sqlite3"
    before = journal_file.read_bytes()
    code, view, _ = _delivery("inspect", "--operation-id", parent, "--state-dir", str(state))
    assert code == 0 and view["parent_id"] == parent and view["outcome"] == "pending"
    assert view["continuation_kind"] == "submit"
    code, dry, _ = _delivery("abandon", "--operation-id", child, "--state-dir", str(state))
    assert code == 0 and dry["applied"] is False
    assert journal_file.read_bytes() == before, "inspect and a dry run wrote nothing"
    code, nothing, stderr = _delivery("transfer-capacity", "--operation-id", child, "--apply",
                                      "--state-dir", str(state))
    assert code == 2 and nothing["errors"][0]["code"] == "journal.decision_not_permitted", stderr


def test_retire_marker_and_attest_epoch(tmp_path: Path) -> None:
    state = tmp_path / "state"
    parent, child = _prepared(state)
    journal = open_sqlite_journal(state / "journal.sqlite3", markers=FileMarkerStore(state / "markers"))
    try:
        row = journal.get_operation(child)
        assert row is not None
        FileMarkerStore(state / "markers").create_if_absent(MayAttemptMarker(
            operation_namespace=row.operation_namespace, operation_id=row.operation_id, parent_id=row.parent_id,
            delivery_key=row.delivery_key, attempt_ordinal=1, generation=row.descriptor.generation,
            expected_revision=row.revision + 7, journal_epoch=1,
            mutation_intent_digest=row.descriptor.mutation_intent_digest,
            created_at_utc=datetime.now(UTC).isoformat()))
        journal.block_mutations(reason="restored from a backup", actor=Actor(ActorKind.OPERATOR, "alice"))
    finally:
        journal.close()
    code, view, _ = _delivery("inspect", "--operation-id", parent, "--state-dir", str(state))
    assert [o["attempt_ordinal"] for o in view["orphan_markers"]] == [1] and view["gate"] == "BLOCKED"
    code, retired, stderr = _delivery("retire-marker", "--operation-id", child, "--attempt", "1", "--evidence",
                                      "the receiver's job list holds nothing of it", "--apply",
                                      "--state-dir", str(state))
    assert code == 0 and retired["applied"] and retired["reconciliation_id"], stderr
    code, view, _ = _delivery("inspect", "--operation-id", parent, "--state-dir", str(state))
    assert view["orphan_markers"] == []
    code, dry, _ = _delivery("attest-epoch", "--epoch", "2", "--attestation", "restore reconciled",
                             "--state-dir", str(state))
    assert (code, dry["gate"], dry["journal_epoch"]) == (0, "BLOCKED", 1)
    code, opened, stderr = _delivery("attest-epoch", "--epoch", "2", "--attestation", "restore reconciled",
                                     "--apply", "--state-dir", str(state))
    assert (code, opened["gate"], opened["journal_epoch"]) == (0, GateState.OPEN.value, 2), stderr
