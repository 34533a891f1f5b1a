"""Seal-all barrier and admission: from a compiled plan and a source to an admitted topology."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from sink.artifacts.port import ImmutableArtifactPort
from sink.contracts.plan import CompiledPlan
from sink.journal.port import DeliveryJournalPort
from sink.preparation.admission import (
    PLAN_ARTIFACT_SCHEMA_ID,
    TOPOLOGY_SCHEMA_ID,
    Prepared,
    TopologyIntent,
    admit,
    build_topology,
    parent_id_for,
)
from sink.preparation.failpoints import FAILPOINTS, env_failpoint
from sink.preparation.sealing import Failpoint, Progress, SealedTopology, seal_all
from sink.source.errors import SourceError
from sink.source.port import SourceSnapshotPort


def _quiet(name: str) -> None:
    return None


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


def prepare(
    plan: CompiledPlan,
    scope_from: date,
    scope_to: date,
    *,
    source: SourceSnapshotPort,
    store: ImmutableArtifactPort,
    journal: DeliveryJournalPort,
    correction_revision: int = 0,
    spill_dir: Path | None = None,
    failpoint: Failpoint = _quiet,
    progress: Progress | None = None,
) -> Prepared:
    """Resume the admitted parent of this interval, or freeze, plan, seal and admit it.

    An empty frozen boundary is not admitted (no profile declares an empty-input promotion policy
    in V1, so the seed's rule is "skip without checkpoint"): ``SourceError(source.empty_boundary)``.
    """
    parent_id = parent_id_for(plan, scope_from, scope_to, correction_revision)
    if journal.get_parent(parent_id) is not None:
        return Prepared(parent_id, journal.load_parent(parent_id), resumed=True, topology=None)
    sealed = seal_all(plan, scope_from, scope_to, source=source, store=store,
                      correction_revision=correction_revision, spill_dir=spill_dir, failpoint=failpoint,
                      progress=progress or _no_progress)
    if sealed.empty:
        raise SourceError("source.empty_boundary", "the frozen boundary has no rows; it is skipped, not admitted")
    intent = build_topology(sealed, store)
    admitted = admit(intent, store, journal, failpoint=failpoint)
    return Prepared(parent_id, admitted, resumed=not admitted.created, topology=intent)


__all__ = [
    "FAILPOINTS",
    "PLAN_ARTIFACT_SCHEMA_ID",
    "TOPOLOGY_SCHEMA_ID",
    "Prepared",
    "SealedTopology",
    "TopologyIntent",
    "admit",
    "build_topology",
    "env_failpoint",
    "parent_id_for",
    "prepare",
    "seal_all",
]
