"""Seal-all barrier and admission: from a compiled plan and a source to an admitted topology."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from sink.artifacts.documents import read_document
from sink.artifacts.gc import ROOT_PREFIX
from sink.artifacts.port import ImmutableArtifactPort
from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.plan import PLAN_ARTIFACT_SCHEMA_ID, CompiledPlan
from sink.journal.port import DeliveryJournalPort
from sink.preparation.admission import (
    TOPOLOGY_SCHEMA_ID,
    Prepared,
    TopologyIntent,
    admit,
    build_topology,
    parent_id_for,
)
from sink.preparation.failpoints import FAILPOINTS, env_failpoint
from sink.preparation.sealing import Failpoint, Progress, SealedTopology, freeze_source, seal_all
from sink.source.freeze import FrozenParent
from sink.source.freeze import load_parent as load_frozen_parent
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

    An existing parent resumes its pinned topology (never re-planned or re-sealed), but only when
    the source still holds the rows it was frozen from: the boundary is frozen again and a different
    content is ``REST_DELIVERY_INTENT_CONFLICT`` before any request (seed: "rereading the same
    logical boundary with corrected bytes ... produces the same delivery key and a different intent,
    so it is blocked"; the change goes out as an explicit new generation).

    An empty frozen boundary is not admitted (no profile declares an empty-input promotion policy
    in V1, so the seed's rule is "skip without checkpoint"): ``EmptyBoundary``.
    """
    parent_id = parent_id_for(plan, scope_from, scope_to, correction_revision)
    if journal.get_parent(parent_id) is not None:
        admitted = journal.load_parent(parent_id)
        _require_same_source(plan, scope_from, scope_to, parent_id, admitted.parent.parent_plan_digest,
                             source=source, store=store, spill_dir=spill_dir)
        return Prepared(parent_id, admitted, resumed=True, topology=None)
    sealed = seal_all(plan, scope_from, scope_to, source=source, store=store,
                      correction_revision=correction_revision, spill_dir=spill_dir, failpoint=failpoint,
                      progress=progress or _no_progress)
    if sealed.empty:
        raise EmptyBoundary(parent_id)
    intent = build_topology(sealed, store)
    admitted = admit(intent, store, journal, failpoint=failpoint)
    return Prepared(parent_id, admitted, resumed=not admitted.created, topology=intent)


class EmptyBoundary(Exception):
    """The frozen boundary holds no rows: the interval is skipped (nothing admitted, no checkpoint)."""

    def __init__(self, parent_id: str) -> None:
        super().__init__("the frozen boundary has no rows; the interval is skipped, nothing is admitted")
        self.parent_id = parent_id


def _require_same_source(plan: CompiledPlan, scope_from: date, scope_to: date, parent_id: str,
                         parent_plan_digest: str, *, source: SourceSnapshotPort, store: ImmutableArtifactPort,
                         spill_dir: Path | None) -> None:
    pinned = admitted_frozen_parent(store, parent_id, parent_plan_digest)
    if pinned is None:
        return  # no topology root (admitted by an older build): the pinned plan is all there is to compare
    frozen = freeze_source(plan, scope_from, scope_to, source=source, store=store, spill_dir=spill_dir)
    if frozen.rows_ref != pinned.rows_ref:
        raise DeliveryError(
            ErrorCode.INTENT_CONFLICT,
            f"the source rows of the admitted interval changed since parent {parent_id} was admitted; nothing was "
            "sent (deliver the change as an explicit new generation: run --correction-revision N)",
        )


def admitted_frozen_parent(store: ImmutableArtifactPort, parent_id: str,
                           parent_plan_digest: str) -> FrozenParent | None:
    """The frozen parent the admitted topology of ``parent_id`` pins (from its gc root).

    A root is published before the admission commits, so a refused admission (an intent conflict)
    leaves a root of its own under the same parent id: only the topology whose plan digest the
    journal admitted is the pinned one, whatever order the store lists roots in."""
    prefix = f"{ROOT_PREFIX}{parent_id}."  # sink.artifacts.gc.root_name
    for name, digest in store.roots():
        if name.startswith(prefix):
            topology = read_document(store, digest, TOPOLOGY_SCHEMA_ID)
            if topology.get("parent_plan_digest") == parent_plan_digest:
                return load_frozen_parent(store, str(topology["frozen_parent_digest"]))
    return None


__all__ = [
    "FAILPOINTS",
    "PLAN_ARTIFACT_SCHEMA_ID",
    "TOPOLOGY_SCHEMA_ID",
    "EmptyBoundary",
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
