"""Shared set-up of the source tests: the bundled async plan and a freeze helper."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from sink.artifacts import LocalArtifactStore
from sink.compiler import compile_files, default_paths
from sink.contracts.plan import CompiledPlan
from sink.payload.encoding import RowEncoder, payload_encoding
from sink.source.freeze import FrozenParent, freeze
from sink.source.normalize import RowNormalizer
from sink.source.port import SourceSnapshotPort

REPO = Path(__file__).resolve().parents[2]
WORKLOADS = REPO / "scenarios" / "workloads"
CSV_HEADER = "business_date,station_id,reading,label,valid,observed_at,sample_count\n"
GOOD_ROW = "2026-03-01,00017,12.500,Москва,true,2026-03-01T08:00:00+03:00,12\n"
SENTINEL = "SENTINEL-4c1d-ROW-CANARY"
FROM, TO = date(2026, 3, 1), date(2026, 3, 5)


def plan(workload: str = "measurements-async") -> CompiledPlan:
    return compile_files(default_paths(WORKLOADS / f"{workload}.yaml"))


def run_freeze(port: SourceSnapshotPort, store: LocalArtifactStore, compiled: CompiledPlan | None = None,
               *, max_day_bytes: int | None = None) -> FrozenParent:
    compiled = compiled or plan()
    assert compiled.mapping is not None
    return freeze(
        snapshot_port=port,
        normalizer=RowNormalizer(compiled.mapping),
        encoder=RowEncoder(compiled.mapping, payload_encoding(compiled.operation)),
        scope_from=FROM,
        scope_to=TO,
        store=store,
        max_day_bytes=max_day_bytes or compiled.operation.limits.max_decoded_bytes,
        compiled_plan_digest=compiled.compiled_plan_digest,
    )
