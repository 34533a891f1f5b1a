"""The declarative scenario catalog (``scenarios/matrix/*.yaml``) and its expansion into rows.

A catalog names one family's workload, receiver personality and binding, and lists rows: one
injected fault each (``certification.faults``) with the endings the certified sink may reach
(``expect.end``) and the baselines that must be caught duplicating. ``expand: failpoints`` turns into
one row per crash point of ``sink.runtime.failpoints.ALL_FAILPOINTS`` of the listed kinds, so a new
failpoint is certified without touching the catalog; ``expand: journal_kills`` into one row per crash
point and kill mode where the journal server dies with the worker frozen at that point
(``certification.journal_faults``: PostgreSQL runs only).

Expectations are strict: a row lists the endings it accepts (``first_run``, ``recovery``,
``operator``, ``blocked``), and any ending that needs an operator or allows a blocked delivery
must say why (``why``): that is reserved for rows where proof is impossible without the receiver's
help or the receiver itself refused the delivery.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from certification.dataset import Dataset, DatasetError, read_dataset
from certification.documents import DocumentError, load_yaml
from certification.history import Ending
from certification.receiver_contract import Fence, ReceiverContract, read_contract
from sink.runtime.failpoints import ALL_FAILPOINTS, JOURNAL_WRITES, PREPARATION_POINTS

CATALOG_SCHEMA = "restproof.fault_matrix_scenarios.v2"
BUNDLED = Path(__file__).resolve().parents[1] / "scenarios" / "matrix"
FailpointKind = Literal["prepare", "journal", "submit", "poll", "summary"]
KillMode = Literal["sigkill", "immediate"]
"""How ``journal_kill`` ends the journal server: SIGKILL to the postmaster, or ``pg_ctl -m immediate``."""
LAPSE_MAX_S = 20.0
"""The longest key retention a ``retention_lapse`` row waits out in real time between two runs."""
SERVER_FAULTS = frozenset({"journal_kill"})
"""Fault types that kill a journal server the harness owns: rows of a ``--journal postgres`` run only."""
_ASYNC_ONLY_WRITES = frozenset({"record_continuation", "record_observation", "record_poll_result"})
_NEVER_HIT_WRITES = frozenset({"record_retry_abandoned"})
_NEEDS_WHY = frozenset({Ending.OPERATOR, Ending.BLOCKED})


class CatalogError(ValueError):
    """A catalog the harness refuses (invalid input: exit 2, before anything runs)."""


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DayTarget(_Closed):
    day: str = Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


class Fault(_Closed):
    type: Literal["none", "proxy", "proxy_kill", "hold_kill_release", "failpoint", "receiver_rule",
                  "external_cancel", "receiver_clock", "connect_timeout", "receiver_crash", "tcp_toxic",
                  "journal_kill", "retention_lapse"]
    rule: dict[str, Any] | None = None
    """``proxy``: a fault-proxy rule; ``receiver_rule``: a receiver behaviour rule."""
    phase: Literal["request_headers", "request", "forwarded", "response"] | None = None
    point: str | None = None
    target: Literal["seeded"] | DayTarget | None = None
    """The day whose first mutation request the fault acts on: a stated day, or one the seed picks."""
    toxic: dict[str, Any] | None = None
    """``tcp_toxic``: a Toxiproxy toxic (``type``, ``stream``, ``attributes``, ``toxicity``)."""
    mode: KillMode | None = None
    """``journal_kill``: how the journal server dies while the worker is frozen at ``point``."""
    retention_seconds: float | None = Field(default=None, gt=0, le=LAPSE_MAX_S)
    """``retention_lapse``: the fence key retention the receiver keeps for this row; the harness waits
    it out in real time after the first run, so every clock (the sink's journal, the receiver) is past it."""
    once: bool = True
    """``tcp_toxic``: removed once the first connection carrying a mutation request has ended."""
    advance_seconds: tuple[float, ...] | None = Field(default=None, min_length=1, max_length=8)
    """``receiver_clock``: the steps the receiver's clock jumps once a job was accepted (each read
    between steps lets the receiver settle what became due, e.g. finish a job, then expire it)."""

    @model_validator(mode="after")
    def _fields_of_type(self) -> Fault:
        needed = {"proxy": "rule", "receiver_rule": "rule", "proxy_kill": "phase", "failpoint": "point",
                  "receiver_clock": "advance_seconds", "tcp_toxic": "toxic", "journal_kill": "point",
                  "retention_lapse": "retention_seconds"}.get(self.type)
        if needed is not None and getattr(self, needed) is None:
            raise ValueError(f"a {self.type} fault needs {needed}")
        if (self.type == "retention_lapse") != (self.retention_seconds is not None):
            raise ValueError("a retention_lapse fault, and only it, names retention_seconds")
        if (self.type == "journal_kill") != (self.mode is not None):
            raise ValueError("a journal_kill fault, and only it, names a kill mode")
        if self.type in ("failpoint", "journal_kill") and self.point not in ALL_FAILPOINTS:
            raise ValueError(f"{self.point!r} is not a crash point of sink.runtime.failpoints")
        if any(not 0 < step <= 10 * 365 * 86400 for step in self.advance_seconds or ()):
            raise ValueError("each clock step is above 0 and at most ten years")
        if self.target is not None and self.type not in ("proxy", "proxy_kill", "hold_kill_release", "retention_lapse"):
            raise ValueError(f"a {self.type} fault cannot target a day")
        return self


class Expect(_Closed):
    end: tuple[Ending, ...] = Field(min_length=1)
    why: str | None = Field(default=None, max_length=400)

    @model_validator(mode="after")
    def _explained(self) -> Expect:
        if set(self.end) & _NEEDS_WHY and not self.why:
            raise ValueError("an expectation that accepts an operator step or a blocked delivery says why")
        return self


class RowSpec(_Closed):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,80}$")
    fault: Fault
    expect: Expect
    caught_duplicating: tuple[str, ...] = ()
    """Baseline sinks that must be caught duplicating on this row (proof the fault was real)."""


class Expansion(_Closed):
    expand: Literal["failpoints", "journal_kills"]
    id: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_-]{0,30}$")
    """Put before each expanded row's name (``sync.<id>.failpoint.<point>``), so two catalogs of one
    family can expand the same crash points without their row ids colliding."""
    kinds: tuple[FailpointKind, ...]
    modes: tuple[KillMode, ...] = Field(default=("sigkill",), min_length=1)
    """``journal_kills``: each crash point once per kill mode."""
    points: tuple[str, ...] | None = None
    """Only these of the kinds' crash points (the critical ones), in this order."""
    expect: Expect
    overrides: dict[str, Expect] = Field(default_factory=dict)
    """Per crash point, where it needs another expectation than the expansion's."""


class Catalog(_Closed):
    schema_id: Literal["restproof.fault_matrix_scenarios.v2"]
    family: Literal["sync_batch", "async_bulk_job"]
    workload: str
    receiver: str
    binding: str
    scope: dict[Literal["from", "to"], str]
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
    fault: Fault
    expect: Expect
    caught_duplicating: tuple[str, ...] = ()
    catalog_uses_tcp: bool = False
    """Some row of this row's catalog needs the TCP fault proxy in the chain."""
    dataset: Dataset | None = field(default=None, compare=False)
    contract: ReceiverContract | None = field(default=None, compare=False)


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


def _catalog(path: Path) -> Catalog:
    try:
        document = load_yaml(path)
        if isinstance(document, dict) and document.get("schema_id") == "restproof.fault_matrix_scenarios.v1":
            raise CatalogError(f"{path}: schema v1 catalogs have no strict expectations; "
                               f"write {CATALOG_SCHEMA} (expect.end per row, docs/certification.md)")
        return Catalog.model_validate(document)
    except DocumentError as exc:
        raise CatalogError(str(exc)) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CatalogError(f"{path}: not a scenario catalog ({where}: {first['msg']})") from None


def load_catalog(path: Path) -> list[Row]:
    catalog = _catalog(path)
    base = path.parent
    prefix = "sync" if catalog.family == "sync_batch" else "async"
    workload, receiver = (base / catalog.workload).resolve(), (base / catalog.receiver).resolve()
    try:
        dataset = read_dataset(workload, catalog.scope["from"], catalog.scope["to"])
        contract = read_contract(receiver)
    except (DatasetError, DocumentError) as exc:
        raise CatalogError(f"{path}: {exc}") from None
    uses_tcp = any(isinstance(entry, RowSpec) and entry.fault.type == "tcp_toxic" for entry in catalog.rows)
    common = {
        "catalog": path, "family": catalog.family, "workload": workload, "receiver": receiver,
        "catalog_uses_tcp": uses_tcp,
        "binding": catalog.binding, "scope_from": catalog.scope["from"], "scope_to": catalog.scope["to"],
        "dataset": dataset, "contract": contract,
    }
    rows: list[Row] = []
    for entry in catalog.rows:
        if isinstance(entry, RowSpec):
            _check_lapse(path, entry, contract.sync_fence if catalog.family == "sync_batch" else contract.async_fence)
            if isinstance(entry.fault.target, DayTarget) and entry.fault.target.day not in dataset.universe:
                raise CatalogError(f"{path}: row {entry.id} targets {entry.fault.target.day}, outside the scope")
            rows.append(Row(row_id=f"{prefix}.{entry.id}", fault=entry.fault, expect=entry.expect,
                            caught_duplicating=entry.caught_duplicating, **common))  # type: ignore[arg-type]
            continue
        rows.extend(_expanded(path, entry, catalog.family, prefix, common))
    return rows


def _check_lapse(path: Path, entry: RowSpec, fence: Fence | None) -> None:
    """A retention lapse acts on a receiver that keeps fence keys: without one there is no retention."""
    if entry.fault.type == "retention_lapse" and (fence is None or not fence.deduplicates):
        raise CatalogError(f"{path}: row {entry.id} lets a key retention lapse, but the receiver keeps no fence keys "
                           "for this family")


def _expanded(path: Path, entry: Expansion, family: str, prefix: str, common: dict[str, Any]) -> list[Row]:
    points = failpoints_of(entry.kinds, family)
    if entry.points is not None:
        outside = sorted(set(entry.points) - set(points))
        if outside:
            raise CatalogError(f"{path}: points the kinds do not make for this family: {outside}")
        points = entry.points
    unknown = sorted(set(entry.overrides) - set(points))
    if unknown:
        raise CatalogError(f"{path}: overrides name crash points the expansion does not make: {unknown}")
    if entry.id is not None:
        prefix = f"{prefix}.{entry.id}"
    if entry.expand == "failpoints":
        return [Row(row_id=f"{prefix}.failpoint.{point}", fault=Fault(type="failpoint", point=point),
                    expect=entry.overrides.get(point, entry.expect), **common)  # type: ignore[arg-type]
                for point in points]
    return [Row(row_id=f"{prefix}.journal_kill.{mode}.{point}",
                fault=Fault(type="journal_kill", point=point, mode=mode),
                expect=entry.overrides.get(point, entry.expect), **common)  # type: ignore[arg-type]
            for point in points for mode in entry.modes]


def load_catalogs(paths: Sequence[Path]) -> list[Row]:
    """Every row of every catalog; the same row id twice is refused before anything runs."""
    rows = [row for path in paths for row in load_catalog(path)]
    seen: dict[str, Path] = {}
    for row in rows:
        if row.row_id in seen:
            raise CatalogError(f"row id {row.row_id} is in {seen[row.row_id]} and {row.catalog}: "
                               "row ids must be unique across the catalogs of a run")
        seen[row.row_id] = row.catalog
    return rows


def bundled_rows() -> list[Row]:
    return load_catalogs(sorted(BUNDLED.glob("*.yaml")))
