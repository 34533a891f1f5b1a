"""Seal-all barrier and admission: one transaction, resume without replanning, crash safety."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from sink import planning, preparation
from sink.artifacts import LocalArtifactStore, collect, read_document
from sink.contracts.errors import DeliveryError, ErrorCode
from sink.journal.markers import FileMarkerStore
from sink.journal.sqlite.adapter import SqliteJournal, open_sqlite_journal
from sink.preparation import (
    TOPOLOGY_SCHEMA_ID,
    EmptyBoundary,
    admit,
    build_topology,
    parent_id_for,
    prepare,
    seal_all,
)
from sink.preparation.failpoints import ENV_VAR, FAILPOINTS
from sink.source.errors import SourceError
from tests.payload.pl_helpers import GOLDEN_RECORDS, REPO, WORKLOADS, ListSource, bundled_plan

FROM, TO = date(2026, 3, 1), date(2026, 3, 8)
SYNTHETIC = WORKLOADS / "measurements-synthetic.yaml"


def _admitted(journal: SqliteJournal):  # type: ignore[no-untyped-def]
    def plan_digest(parent_id: str) -> str | None:
        parent = journal.get_parent(parent_id)
        return None if parent is None else parent.parent_plan_digest

    return plan_digest


def _journal(tmp_path: Path) -> SqliteJournal:
    return open_sqlite_journal(tmp_path / "journal.db", markers=FileMarkerStore(tmp_path / "markers"))


def test_prepare_admits_every_sealed_child_in_one_parent(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")
    journal = _journal(tmp_path)
    plan = bundled_plan("measurements-sync")
    result = prepare(plan, FROM, TO, source=ListSource(GOLDEN_RECORDS), store=store, journal=journal)
    assert result.admitted.created and not result.resumed and result.topology is not None
    rows = [row.descriptor for row in result.admitted.children]
    assert len(rows) == len(result.topology.children) > 1
    assert [d.ordinal for d in rows] == list(range(len(rows)))
    assert len({d.delivery_key for d in rows}) == len(rows)
    assert rows[0].scope.start == "2026-03-01T00:00:00Z" and rows[-1].scope.end == "2026-03-08T00:00:00Z"
    topology = read_document(store, result.topology.topology_ref, TOPOLOGY_SCHEMA_ID)
    assert topology["parent_plan_digest"] == result.admitted.parent.parent_plan_digest
    assert [c["mutation_intent_digest"] for c in topology["children"]] == [d.mutation_intent_digest for d in rows]
    report = collect(store, admitted_plan_digest=_admitted(journal), grace_seconds=0)
    assert report.unreferenced == ()
    assert {d.payload_ref for d in rows} <= set(report.live)


def test_an_admitted_parent_resumes_without_planner_or_sealer(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")
    journal = _journal(tmp_path)
    plan = bundled_plan("measurements-sync")
    first = prepare(plan, FROM, TO, source=ListSource(GOLDEN_RECORDS), store=store, journal=journal)

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("a resumed parent must not be planned, sealed or admitted again")

    monkeypatch.setattr(planning, "PLANNER_ALGORITHM_VERSION", "restproof.planner.v999")
    monkeypatch.setattr(planning, "plan_children", forbidden)
    monkeypatch.setattr(preparation, "seal_all", forbidden)
    monkeypatch.setattr(preparation, "build_topology", forbidden)
    monkeypatch.setattr(preparation, "admit", forbidden)
    # The same rows again: the boundary is frozen only to compare it with the admitted one.
    same = ListSource(GOLDEN_RECORDS)
    again = prepare(plan, FROM, TO, source=same, store=store, journal=journal)
    assert again.resumed and again.topology is None
    assert again.admitted.parent.parent_plan_digest == first.admitted.parent.parent_plan_digest
    assert [c.descriptor for c in again.admitted.children] == [c.descriptor for c in first.admitted.children]


def test_a_rerun_whose_source_changed_is_an_intent_conflict_before_anything_is_sent(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")
    journal = _journal(tmp_path)
    plan = bundled_plan("measurements-sync")
    first = prepare(plan, FROM, TO, source=ListSource(GOLDEN_RECORDS), store=store, journal=journal)
    changed = ListSource([dict(GOLDEN_RECORDS[0], reading="99.000"), *GOLDEN_RECORDS[1:]])
    with pytest.raises(DeliveryError) as caught:
        prepare(plan, FROM, TO, source=changed, store=store, journal=journal)
    assert caught.value.code is ErrorCode.INTENT_CONFLICT
    assert "--correction-revision" in str(caught.value)
    children = journal.load_parent(first.admitted.parent.parent_id).children
    assert [c.revision for c in children] == [c.revision for c in first.admitted.children]  # nothing moved


def test_a_different_intent_for_an_admitted_parent_is_refused(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")
    journal = _journal(tmp_path)
    plan = bundled_plan("measurements-sync")
    prepare(plan, FROM, TO, source=ListSource(GOLDEN_RECORDS), store=store, journal=journal)
    corrected = [dict(GOLDEN_RECORDS[0], reading="99.000"), *GOLDEN_RECORDS[1:]]
    intent = build_topology(seal_all(plan, FROM, TO, source=ListSource(corrected), store=store), store)
    with pytest.raises(DeliveryError) as caught:
        admit(intent, store, journal)
    assert caught.value.code is ErrorCode.INTENT_CONFLICT


def test_hostile_source_admits_nothing(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")
    journal = _journal(tmp_path)
    plan = bundled_plan("measurements-sync")
    hostile = ListSource([*GOLDEN_RECORDS, {k: v for k, v in GOLDEN_RECORDS[0].items() if k != "business_date"}],
                         declare_columns=False)
    with pytest.raises(SourceError) as caught:
        prepare(plan, FROM, TO, source=hostile, store=store, journal=journal)
    assert caught.value.code == "source.missing_scope_field"
    assert journal.get_parent(parent_id_for(plan, FROM, TO)) is None
    assert list(store.roots()) == []


def test_an_empty_boundary_is_skipped_not_admitted(tmp_path: Path) -> None:
    journal = _journal(tmp_path)
    plan = bundled_plan("measurements-sync")
    with pytest.raises(EmptyBoundary) as caught:
        prepare(plan, FROM, TO, source=ListSource([]), store=LocalArtifactStore(tmp_path / "a"), journal=journal)
    assert caught.value.parent_id == parent_id_for(plan, FROM, TO)
    assert journal.get_parent(parent_id_for(plan, FROM, TO)) is None


def _run(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tests.preparation.pr_run", str(SYNTHETIC), str(tmp_path / "artifacts"),
               str(tmp_path / "journal.db"), str(tmp_path / "markers"), FROM.isoformat(), TO.isoformat()]
    return subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=REPO,
                          env={**os.environ, **env}, check=False)


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("variable", "point"), [
    *((ENV_VAR, point) for point in FAILPOINTS),
    ("RESTPROOF_JOURNAL_FAULT", "admit.parent_inserted"),
])
def test_sigkill_leaves_nothing_or_everything(tmp_path: Path, variable: str, point: str) -> None:
    killed = _run(tmp_path, {variable: point})
    assert killed.returncode == -9, killed.stderr[-2000:]
    plan = bundled_plan("measurements-synthetic")
    parent_id = parent_id_for(plan, FROM, TO)
    journal = _journal(tmp_path)
    store = LocalArtifactStore(tmp_path / "artifacts")
    parent = journal.get_parent(parent_id)
    if point == "admit.committed":
        assert parent is not None  # the commit happened before the kill: everything
        assert len(journal.load_parent(parent_id).children) == parent.child_count
    else:
        assert parent is None  # nothing admitted
    journal.close()
    again = _run(tmp_path, {})
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout.split()[2] == ("True" if point == "admit.committed" else "False")
    journal = _journal(tmp_path)
    admitted = journal.load_parent(parent_id)
    report = collect(store, admitted_plan_digest=_admitted(journal), grace_seconds=0)
    for child in admitted.children:  # every admitted reference is intact and live; the rest are orphans
        assert child.descriptor.payload_ref in report.live
        assert b"".join(store.open(child.descriptor.payload_ref).chunks())
    journal.close()
