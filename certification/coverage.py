"""Fault-space coverage: which combinations of the fault space a run's rows exercised.

The space is enumerated from the code's own lists, never typed by hand: the fault proxy's fault
models (action x phase, from their ``Literal`` fields), the TCP proxy's toxic types x directions, the
receiver's rule kinds and job outcomes, the reference sink's crash points, every bundled receiver
personality with the families it serves, and the journal backends. The journal server's deaths
(crash point of a journal write x kill mode) are cells of the PostgreSQL journal only: the embedded
SQLite journal has no server to lose. Each row covers the cells its
fault names for its family, personality and journal. ``scenarios/fault-space.yaml`` names the
cells left out and why: ``not_meaningful`` (excluded from the figure, with the reason) or ``not_yet``
(counted as missing, with the reason). The figure is covered / (all - not meaningful).
"""

from __future__ import annotations

import fnmatch
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from certification.documents import load_yaml
from certification.receiver_contract import Fence, read_contract
from certification.scenarios import BUNDLED, KillMode, Row, failpoints_of
from sink.runtime.failpoints import PREPARATION_POINTS

RECEIVERS = BUNDLED.parent / "receivers"
EXCLUSIONS = BUNDLED.parent / "fault-space.yaml"
JOURNALS = ("sqlite", "postgres")
JOURNAL_RUNS = {"sqlite": "`certify run` (the default journal)", "postgres": "`certify run --journal postgres`"}
OTHER_JOURNAL = "a run covers one journal; the {journal} journal's cells are covered by {command}"
FAMILIES = ("sync_batch", "async_bulk_job")
JOB_OUTCOMES = ("external_cancel", "receipt_expiry")
RECEIVER_OUTCOMES = ("crash",)
ANY_PERSONALITY = "any"
"""The personality of a cell no receiver personality can change (``crash_personality``)."""
RECEIVER_FACING_WRITES = frozenset({"reserve_submitting", "record_submit_result", "record_continuation",
                                    "record_observation", "record_poll_result", "record_verification"})
"""Journal writes around a receiver's answer: a crash there recovers through what the receiver says."""
KEY_EXPIRY = "key_expiry"
"""A fence key forgotten after the receiver's retention while its effect stays unknown to the sink."""
WIRE_FAULTS = ("connect_stall",)
"""The wire tap's own faults (certification.wiretap): a connect that never completes."""


@dataclass(frozen=True, slots=True, order=True)
class Cell:
    dimension: str
    """``http`` (action, phase), ``tcp`` (toxic, stream), ``receiver`` (rule kind / job outcome),
    ``crash_point`` (point), ``journal_server`` (point, kill mode), ``none``."""
    key: tuple[str, ...]
    family: str
    personality: str
    journal: str

    def name(self) -> str:
        return f"{self.family}/{self.personality}/{self.journal}/{self.dimension}:{'.'.join(self.key)}"


def _literal_values(model: type[BaseModel], field: str) -> tuple[str, ...]:
    annotation = model.model_fields[field].annotation
    return tuple(str(value) for value in typing.get_args(annotation))


def http_cells() -> tuple[tuple[str, str], ...]:
    """(action, phase) of every fault the proxy's rule models accept."""
    from fault_proxy import rules  # noqa: PLC0415 - the proxy's own lists, read once per run

    models = [getattr(rules, name) for name in dir(rules) if name.endswith("Fault") and name != "Fault"]
    pairs = {(action, phase) for model in models if isinstance(model, type) and issubclass(model, BaseModel)
             and "action" in model.model_fields and "phase" in model.model_fields
             for action in _literal_values(model, "action") for phase in _literal_values(model, "phase")}
    return tuple(sorted(pairs))


def tcp_cells() -> tuple[tuple[str, str], ...]:
    from fault_proxy.tcp.toxics import Stream, ToxicType  # noqa: PLC0415

    return tuple((toxic.value, stream.value) for toxic in ToxicType for stream in Stream)


def receiver_cells(family: str) -> tuple[tuple[str], ...]:
    from mock_receiver import behaviour  # noqa: PLC0415

    action = typing.get_args(behaviour.Action)[0]
    kinds = sorted(_literal_values(model, "kind")[0] for model in typing.get_args(action))
    if family == "sync_batch":
        kinds = [kind for kind in kinds if kind != "job_failure"]
    else:
        kinds.extend(JOB_OUTCOMES)
    kinds.extend(RECEIVER_OUTCOMES)
    return tuple((kind,) for kind in kinds)


def crash_personality(point: str, personality: str) -> str:
    """The personality a crash point's cell belongs to: its own where the receiver's answers shape the
    recovery (the mutation reserved, sent, answered, recorded; polls; the read-only summary), and
    ``any`` where no receiver answer is involved. Before the first mutation is reserved (freeze, seal,
    admit, the lease, the marker) nothing has reached the receiver, and after its answer is durable
    (promotion, release) nothing more is asked of it: the same crash and the same recovery on every
    personality of the family, so one row covers them all."""
    if point in PREPARATION_POINTS:
        return ANY_PERSONALITY
    kind, _, rest = point.partition(".")
    write = rest.rpartition(".")[0]
    return ANY_PERSONALITY if kind == "journal" and write not in RECEIVER_FACING_WRITES else personality


def personalities() -> dict[str, tuple[str, ...]]:
    """Every bundled receiver personality with the families it serves."""
    return {name: tuple(families) for name, families in _served().items()}


def _served() -> dict[str, dict[str, Fence]]:
    """Every bundled receiver personality: each family it serves, with that family's fence."""
    served: dict[str, dict[str, Fence]] = {}
    for path in sorted(RECEIVERS.glob("*.yaml")):
        contract = read_contract(path)
        fences = {"sync_batch": contract.sync_fence, "async_bulk_job": contract.async_fence}
        served[contract.name] = {family: fence for family, fence in fences.items() if fence is not None}
    return served


def key_expiry_cells(fence: Fence) -> tuple[tuple[str], ...]:
    """A fence whose receiver forgets keys after a stated retention has a key-expiry cell; one that keeps
    them for good (or keeps none) has nothing that could lapse."""
    return ((KEY_EXPIRY,),) if fence.deduplicates and fence.retention_seconds is not None else ()


def fault_space() -> list[Cell]:
    cells: list[Cell] = []
    http, tcp = http_cells(), tcp_cells()
    for personality, fences in _served().items():
        for family, fence in fences.items():
            for journal in JOURNALS:
                def add(dimension: str, keys: Iterable[tuple[str, ...]], *, f: str = family,
                        p: str = personality, j: str = journal) -> None:
                    cells.extend(Cell(dimension, key, f, p, j) for key in keys)

                add("none", [("none",)])
                add("http", http)
                add("tcp", tcp)
                add("wire", [(name,) for name in WIRE_FAULTS])
                add("receiver", receiver_cells(family))
                add("receiver", key_expiry_cells(fence))
                for point in failpoints_of(("prepare", "journal", "submit", "poll", "summary"), family):
                    add("crash_point", [(point,)], p=crash_personality(point, personality))
                if journal == "postgres":
                    for point in failpoints_of(("journal",), family):
                        add("journal_server", [(point, mode) for mode in typing.get_args(KillMode)],
                            p=crash_personality(point, personality))
    return sorted(set(cells))


def row_cells(row: Row, journal: str) -> list[Cell]:
    """The cells one row covers."""
    fault = row.fault
    personality = row.contract.name if row.contract is not None else Path(row.receiver).stem
    keys: list[tuple[str, tuple[str, ...]]] = []
    rule: dict[str, Any] = fault.rule or {}
    if fault.type == "none":
        keys.append(("none", ("none",)))
    elif fault.type == "proxy":
        action = rule.get("fault", {})
        keys.append(("http", (str(action.get("action")), str(action.get("phase") or _default_phase(action)))))
    elif fault.type == "proxy_kill":
        keys.append(("http", ("kill", str(fault.phase))))
    elif fault.type == "hold_kill_release":
        keys.append(("http", ("hold", "request")))
    elif fault.type == "failpoint":
        personality = crash_personality(str(fault.point), personality)
        keys.append(("crash_point", (str(fault.point),)))
    elif fault.type == "receiver_rule":
        keys.append(("receiver", (str(rule.get("action", {}).get("kind")),)))
    elif fault.type == "external_cancel":
        keys.append(("receiver", ("external_cancel",)))
    elif fault.type == "receiver_clock":
        keys.append(("receiver", ("receipt_expiry",)))
    elif fault.type == "retention_lapse":
        keys.append(("receiver", (KEY_EXPIRY,)))
    elif fault.type == "receiver_crash":
        keys.append(("receiver", ("crash",)))
    elif fault.type == "tcp_toxic":
        toxic = fault.toxic or {}
        keys.append(("tcp", (str(toxic.get("type")), str(toxic.get("stream", "downstream")))))
    elif fault.type == "connect_timeout":
        keys.append(("wire", ("connect_stall",)))
    elif fault.type == "journal_kill":
        personality = crash_personality(str(fault.point), personality)
        keys.append(("journal_server", (str(fault.point), str(fault.mode))))
    return [Cell(dimension, key, row.family, personality, journal) for dimension, key in keys]


def _default_phase(action: dict[str, Any]) -> str:
    return {"truncate": "response", "status": "request"}.get(str(action.get("action")), "")


class Exclusion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cells: str = Field(min_length=1, max_length=300)
    """A glob over ``Cell.name()``: ``family/personality/journal/dimension:key``."""
    why: str = Field(min_length=1, max_length=400)
    kind: Literal["not_meaningful", "not_yet"]


class Exclusions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_id: Literal["restproof.fault_space_exclusions.v1"]
    exclusions: tuple[Exclusion, ...] = ()


def load_exclusions(path: Path = EXCLUSIONS) -> tuple[Exclusion, ...]:
    return Exclusions.model_validate(load_yaml(path)).exclusions


@dataclass(frozen=True, slots=True)
class Coverage:
    total: int
    not_meaningful: int
    covered: int
    not_yet: tuple[tuple[str, int], ...]
    """(why, cells) of meaningful cells left out on purpose, not yet covered."""
    unexplained: tuple[str, ...]
    """Meaningful cells no row covers and no exclusion explains (at most 50 named)."""
    unexplained_count: int
    journal: str = ""
    journal_meaningful: int = 0
    """Meaningful cells of the run's own journal: the most one run can cover."""

    @property
    def figure(self) -> float:
        meaningful = self.total - self.not_meaningful
        return round(self.covered / meaningful, 4) if meaningful else 1.0

    @property
    def journal_figure(self) -> float:
        return round(self.covered / self.journal_meaningful, 4) if self.journal_meaningful else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {"cells": self.total, "not_meaningful": self.not_meaningful, "meaningful": self.total -
                self.not_meaningful, "covered": self.covered, "coverage": self.figure,
                "not_yet": [{"why": why, "cells": count} for why, count in self.not_yet],
                "unexplained": list(self.unexplained), "unexplained_count": self.unexplained_count,
                "journal": self.journal, "journal_meaningful": self.journal_meaningful,
                "journal_coverage": self.journal_figure}


def _excluded(cell: Cell, exclusions: Sequence[Exclusion]) -> Exclusion | None:
    name = cell.name()
    return next((item for item in exclusions if fnmatch.fnmatchcase(name, item.cells)), None)


def coverage(rows: Sequence[Row], journal: str, exclusions: Sequence[Exclusion] | None = None) -> Coverage:
    space = fault_space()
    rules = load_exclusions() if exclusions is None else exclusions
    covered = {cell for row in rows for cell in row_cells(row, journal)} & set(space)
    not_meaningful, unexplained = 0, []
    not_yet: dict[str, int] = {}
    for cell in space:
        if cell in covered:
            continue
        if cell.journal != journal:  # a run has one journal: the other's cells wait for a run on it
            why = OTHER_JOURNAL.format(journal=cell.journal, command=JOURNAL_RUNS[cell.journal])
            not_yet[why] = not_yet.get(why, 0) + 1
            continue
        rule = _excluded(cell, rules)
        if rule is not None and rule.kind == "not_meaningful":
            not_meaningful += 1
        elif rule is not None:
            not_yet[rule.why] = not_yet.get(rule.why, 0) + 1
        else:
            unexplained.append(cell.name())
    return Coverage(len(space), not_meaningful, len(covered), tuple(sorted(not_yet.items())),
                    tuple(unexplained[:50]), len(unexplained), journal,
                    # only this journal's cells can be not meaningful: the other's never reach a rule
                    sum(1 for cell in space if cell.journal == journal) - not_meaningful)
