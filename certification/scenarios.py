"""The declarative scenario catalog (``scenarios/matrix/*.yaml``) and its expansion into rows.

A catalog names one family's workload, receiver personality and binding, and lists rows: one
injected fault each (a proxy rule, a kill of the sink process at a proxy phase, a request held in
flight while its worker dies, or one of the reference sink's failpoints) with the expectation for
the reference sink and the baseline sinks that must be caught duplicating. ``expand: failpoints``
turns into one row per crash point of ``sink.runtime.failpoints.ALL_FAILPOINTS`` of the listed
kinds, so a new failpoint is certified without touching the catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sink.runtime.failpoints import ALL_FAILPOINTS, JOURNAL_WRITES, PREPARATION_POINTS

CATALOG_SCHEMA = "restproof.fault_matrix_scenarios.v1"
BUNDLED = Path(__file__).resolve().parents[1] / "scenarios" / "matrix"
Expectation = Literal["completed", "safe"]
FailpointKind = Literal["prepare", "journal", "submit", "poll", "summary"]
_ASYNC_ONLY_WRITES = frozenset({"record_continuation", "record_observation", "record_poll_result"})
_NEVER_HIT_WRITES = frozenset({"record_retry_abandoned"})


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fault(_Closed):
    type: Literal["none", "proxy", "proxy_kill", "hold_kill_release", "failpoint"]
    rule: dict[str, Any] | None = None
    phase: Literal["request_headers", "request", "forwarded", "response"] | None = None
    point: str | None = None


class Expect(_Closed):
    reference: Expectation = "safe"


class RowSpec(_Closed):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,80}$")
    fault: Fault
    expect: Expect = Field(default_factory=Expect)
    naive_duplicates: tuple[str, ...] = ()


class Expansion(_Closed):
    expand: Literal["failpoints"]
    kinds: tuple[FailpointKind, ...]
    expect: Expect = Field(default_factory=Expect)


class Catalog(_Closed):
    schema_id: Literal["restproof.fault_matrix_scenarios.v1"]
    family: Literal["sync_batch", "async_bulk_job"]
    workload: str
    receiver: str
    binding: str
    scope: dict[Literal["from", "to"], str]
    fenced_receiver: bool
    rows: tuple[RowSpec | Expansion, ...] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class Row:
    row_id: str
    catalog: Path
    family: str
    workload: Path
    receiver: Path
    binding: str
    scope_from: str
    scope_to: str
    fenced_receiver: bool
    fault: Fault
    expect: Expect
    naive_duplicates: tuple[str, ...] = field(default=())


def failpoints_of(kinds: Sequence[str], family: str) -> tuple[str, ...]:
    chosen: list[str] = []
    if "prepare" in kinds:
        chosen.extend(PREPARATION_POINTS)
    if "journal" in kinds:
        writes = [w for w in JOURNAL_WRITES if w not in _NEVER_HIT_WRITES
                  and (family == "async_bulk_job" or w not in _ASYNC_ONLY_WRITES)]
        chosen.extend(f"journal.{w}.{when}" for w in writes for when in ("before", "after"))
    for kind in ("submit", "poll", "summary"):
        if kind in kinds and (kind != "poll" or family == "async_bulk_job"):
            chosen.extend(point for point in ALL_FAILPOINTS if point.startswith(f"http.{kind}."))
    return tuple(chosen)


def load_catalog(path: Path) -> list[Row]:
    from sink.bounded_yaml import load_bounded_yaml_file  # noqa: PLC0415

    catalog = Catalog.model_validate(load_bounded_yaml_file(path))
    base = path.parent
    prefix = "sync" if catalog.family == "sync_batch" else "async"
    common = {
        "catalog": path, "family": catalog.family, "workload": (base / catalog.workload).resolve(),
        "receiver": (base / catalog.receiver).resolve(), "binding": catalog.binding,
        "scope_from": catalog.scope["from"], "scope_to": catalog.scope["to"],
        "fenced_receiver": catalog.fenced_receiver,
    }
    rows: list[Row] = []
    for entry in catalog.rows:
        if isinstance(entry, RowSpec):
            rows.append(Row(row_id=f"{prefix}.{entry.id}", fault=entry.fault, expect=entry.expect,
                            naive_duplicates=entry.naive_duplicates, **common))  # type: ignore[arg-type]
            continue
        for point in failpoints_of(entry.kinds, catalog.family):
            rows.append(Row(row_id=f"{prefix}.failpoint.{point}", fault=Fault(type="failpoint", point=point),
                            expect=entry.expect, **common))  # type: ignore[arg-type]
    ids = [row.row_id for row in rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: duplicate row ids")
    return rows


def bundled_rows() -> list[Row]:
    return [row for path in sorted(BUNDLED.glob("*.yaml")) for row in load_catalog(path)]
