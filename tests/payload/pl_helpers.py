"""Shared helpers of the payload tests: an in-memory source, profile variants, sealing."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from sink.artifacts import LocalArtifactStore
from sink.compiler import compile_files, default_paths
from sink.contracts.plan import CompiledPlan
from sink.contracts.profile import OperationProfile
from sink.payload.body import WireBody
from sink.preparation import SealedTopology, seal_all

REPO = Path(__file__).resolve().parents[2]
WORKLOADS = REPO / "scenarios" / "workloads"
FROM, TO = date(2026, 3, 1), date(2026, 3, 4)
COLUMNS = ["business_date", "station_id", "reading", "label", "valid", "observed_at", "sample_count"]

# Cyrillic and other non-ASCII text, null vs empty, leading zeros, decimals, zoned timestamps.
GOLDEN_RECORDS: list[dict[str, object]] = [
    {"business_date": "2026-03-01", "station_id": "00017", "reading": "12.5", "label": "Москва-Север",
     "valid": "true", "observed_at": "2026-03-01T08:00:00+03:00", "sample_count": "12"},
    {"business_date": "2026-03-01", "station_id": "00042", "reading": "-0.125", "label": "",
     "valid": "false", "observed_at": "2026-03-01T06:30:00-01:30", "sample_count": None},
    {"business_date": "2026-03-02", "station_id": "007", "reading": "1000", "label": None,
     "valid": "true", "observed_at": "2026-03-02T23:59:59Z", "sample_count": "0"},
    {"business_date": "2026-03-02", "station_id": "00100", "reading": "-0.000", "label": 'Zürich "Ost", 東京\nline',
     "valid": "true", "observed_at": "2026-03-02T00:00:00-05:00", "sample_count": "-3"},
    {"business_date": "2026-03-03", "station_id": "00001", "reading": "0.001", "label": "Ελλάδα",
     "valid": "false", "observed_at": "2026-03-03T12:00:00+05:30", "sample_count": "99999999999"},
]

# Keeps null and "" apart (the bundled mapping folds "" into null).
KEEP_EMPTY_MAPPING = {"id": "mock.measurements.v1", "scope_field": "business_date", "fields": [
    {"name": "business_date", "type": "date"},
    {"name": "station_id", "type": "string"},
    {"name": "reading", "type": "decimal", "scale": 3},
    {"name": "label", "type": "string", "nullable": True, "empty_string": "preserve"},
    {"name": "valid", "type": "boolean"},
    {"name": "observed_at", "type": "timestamp"},
    {"name": "sample_count", "type": "integer", "nullable": True},
]}


class ListSnapshot:
    kind = "memory"

    def __init__(self, records: Sequence[Mapping[str, object]], columns: list[str] | None) -> None:
        self._records = records
        self._columns = columns

    def columns(self) -> list[str] | None:
        return self._columns

    def records(self) -> Iterator[tuple[int, Mapping[str, object]]]:
        yield from enumerate(self._records, start=1)

    def finish(self) -> str:
        return "memory:v1"

    def close(self) -> None:
        return None


class ListSource:
    def __init__(self, records: Sequence[Mapping[str, object]], *, declare_columns: bool = True) -> None:
        self.records = records
        self.columns = COLUMNS if declare_columns else None
        self.opened = 0

    def open(self, scope_from: date, scope_to: date) -> ListSnapshot:
        self.opened += 1
        return ListSnapshot(self.records, self.columns)


def bundled_plan(workload: str = "measurements-async") -> CompiledPlan:
    return compile_files(default_paths(WORKLOADS / f"{workload}.yaml"))


def variant(plan: CompiledPlan, *, body: Mapping[str, Any] | None = None, limits: Mapping[str, Any] | None = None,
            mapping: Mapping[str, Any] | None = None) -> CompiledPlan:
    """The plan with parts of its profile request body, limits or mapping replaced (not re-digested:
    only the codec and the planner read these fields in the payload tests)."""
    document = plan.model_dump(mode="json")
    if body is not None and "type" in body:
        media = {"ndjson": "application/x-ndjson", "csv": "text/csv", "json_array": "application/json"}
        document["operation"]["request"]["body"] = dict(body)
        document["operation"]["request"]["media_type"] = media[str(body["type"])]
    elif body is not None:
        merged = document["operation"]["request"]["body"]
        for key, value in body.items():
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value
    if limits is not None:
        document["operation"]["limits"].update(limits)
    if mapping is not None:
        document["mapping"] = {**mapping, "schema_id": "restproof.payload_mapping.v1"}
    OperationProfile.model_validate(document["operation"])
    return CompiledPlan.model_validate(document)


def seal(plan: CompiledPlan, store: LocalArtifactStore, records: Sequence[Mapping[str, object]] = GOLDEN_RECORDS,
         scope_from: date = FROM, scope_to: date = TO) -> SealedTopology:
    return seal_all(plan, scope_from, scope_to, source=ListSource(records), store=store)


def wire_bytes(store: LocalArtifactStore, payload_ref: str) -> bytes:
    return b"".join(WireBody.load(store, payload_ref).chunks())
