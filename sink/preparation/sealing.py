"""The seal-all barrier: freeze -> plan -> seal every child -> refine until every limit holds.

Seed: "Execution algorithm" steps 2-5. The parent artifact, not the source, is the only input
to planning and sealing. A child whose measured rows, decoded or wire bytes break a limit is
split by the planner's deterministic ``refine`` and the new windows are sealed; unchanged
windows keep their sealed artifact (content addressed, so nothing is sealed twice). The loop is
bounded: every refinement strictly splits a window, and a lone business date that still breaks a
hard limit is REST_DELIVERY_SCOPE_EXCEEDS_LIMIT, never divided.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from sink import planning
from sink.artifacts.port import ImmutableArtifactPort
from sink.compiler import child_delivery_identity, delivery_identity
from sink.contracts.plan import CompiledPlan, DeliveryIdentity
from sink.contracts.planning import ChildMeasurement, ChildWindow
from sink.payload.compression import DEFAULT_IMPLEMENTATION
from sink.payload.encoding import RowEncoder, payload_encoding
from sink.payload.rendering import RequestSymbols, render_request
from sink.payload.sealer import ChildSpec, SealedChild, StreamingSealer
from sink.planning.limits import planning_limits_from_plan
from sink.source.errors import SourceError
from sink.source.freeze import FrozenParent, freeze
from sink.source.normalize import RowNormalizer
from sink.source.port import SourceSnapshotPort

MAX_REFINEMENTS = 64
Failpoint = Callable[[str], None]
Progress = Callable[[str, int, int], None]


def _quiet(name: str) -> None:
    return None


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True, slots=True)
class SealedTopology:
    plan: CompiledPlan
    parent_identity: DeliveryIdentity
    frozen: FrozenParent
    windows: tuple[ChildWindow, ...]
    children: tuple[SealedChild, ...]
    identities: tuple[DeliveryIdentity, ...]
    planner_algorithm_version: str
    coverage: planning.CoverageProof
    sealer_identity: dict[str, object]

    @property
    def empty(self) -> bool:
        return self.frozen.row_count == 0


def seal_all(
    plan: CompiledPlan,
    scope_from: date,
    scope_to: date,
    *,
    source: SourceSnapshotPort,
    store: ImmutableArtifactPort,
    correction_revision: int = 0,
    spill_dir: Path | None = None,
    failpoint: Failpoint = _quiet,
    progress: Progress = _no_progress,
    deflate: str = DEFAULT_IMPLEMENTATION,
) -> SealedTopology:
    parent_identity = delivery_identity(plan, scope_from, scope_to, correction_revision)
    encoder = _encoder(plan)
    frozen = freeze_source(plan, scope_from, scope_to, source=source, store=store, spill_dir=spill_dir,
                           failpoint=failpoint)
    progress("frozen", frozen.rows_bytes, frozen.rows_bytes)
    limits = planning_limits_from_plan(plan, frozen.fixed_overhead_bytes)
    buckets = frozen.buckets()
    windows = planning.plan_children(scope_from, scope_to, buckets, limits)
    summary = plan.operation.verification.summary if plan.operation.verification is not None else None
    sealer = StreamingSealer(store, frozen, encoder, implementation=deflate,
                             summary_scheme=None if summary is None else summary.digest_scheme)
    cache: dict[tuple[date, date], tuple[SealedChild, DeliveryIdentity]] = {}
    first = True
    for _ in range(MAX_REFINEMENTS):
        sealed: list[SealedChild] = []
        identities: list[DeliveryIdentity] = []
        done = 0
        for window in windows:
            child, identity = _seal_window(plan, parent_identity, sealer, window, cache)
            sealed.append(child)
            identities.append(identity)
            done += sum(day.decoded_bytes for day in frozen.day_range(window.scope_from, window.scope_to))
            progress("sealing", done, frozen.rows_bytes)
            if first:
                failpoint("seal.first_child_sealed")
                first = False
        measurements: dict[int, ChildMeasurement] = {c.spec.ordinal: c.measurement() for c in sealed}
        refined = planning.refine(windows, measurements, buckets, limits)
        if refined is None:
            break
        windows = refined
    else:  # pragma: no cover - refine strictly splits, so this bound is never reached
        raise RuntimeError("refinement did not converge")
    coverage = planning.coverage_proof(windows, scope_from, scope_to, frozen.row_count, buckets=buckets)
    failpoint("seal.all_sealed")
    return SealedTopology(plan, parent_identity, frozen, tuple(windows), tuple(sealed), tuple(identities),
                          planning.PLANNER_ALGORITHM_VERSION, coverage, sealer.identity())


def _encoder(plan: CompiledPlan) -> RowEncoder:
    if plan.mapping is None:
        raise SourceError("source.not_configured", "the plan has no pinned mapping (compile it from files)")
    return RowEncoder(plan.mapping, payload_encoding(plan.operation))


def freeze_source(plan: CompiledPlan, scope_from: date, scope_to: date, *, source: SourceSnapshotPort,
                  store: ImmutableArtifactPort, spill_dir: Path | None = None,
                  failpoint: Failpoint = _quiet) -> FrozenParent:
    """Freeze one source boundary into an immutable parent artifact (seed: "Execution algorithm" step 2)."""
    encoder = _encoder(plan)
    assert plan.mapping is not None  # _encoder refused a plan without one
    return freeze(
        snapshot_port=source, normalizer=RowNormalizer(plan.mapping), encoder=encoder, scope_from=scope_from,
        scope_to=scope_to, store=store, max_day_bytes=plan.operation.limits.max_decoded_bytes,
        compiled_plan_digest=plan.compiled_plan_digest, spill_dir=spill_dir, failpoint=failpoint,
    )


def _seal_window(
    plan: CompiledPlan,
    parent_identity: DeliveryIdentity,
    sealer: StreamingSealer,
    window: ChildWindow,
    cache: dict[tuple[date, date], tuple[SealedChild, DeliveryIdentity]],
) -> tuple[SealedChild, DeliveryIdentity]:
    key = (window.scope_from, window.scope_to)
    if key in cache:
        child, identity = cache[key]
        spec = dataclasses.replace(child.spec, ordinal=window.ordinal)
        return dataclasses.replace(child, spec=spec), identity
    identity = child_delivery_identity(plan, parent_identity, window.scope_from, window.scope_to)
    rendered = render_request(plan, RequestSymbols(
        resource=plan.workload.resource, delivery_key=identity.delivery_key,
        receiver_mutation_key=identity.receiver_mutation_key, scope_from=window.scope_from,
        scope_to=window.scope_to))
    spec = ChildSpec(window.ordinal, window.scope_from, window.scope_to, window.row_start, window.row_end,
                     identity.delivery_key, identity.receiver_mutation_key, rendered)
    child = sealer.seal(spec)
    cache[key] = (child, identity)
    return child, identity
