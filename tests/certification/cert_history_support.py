"""Small builders of histories for the checker, exercise, verdict and history tests.

Defaults describe a clean delivery of a two-day scope by one run: every day holds exactly the
dataset's rows after it and once settled, one request per day, one effect per day, exit 0. Each
test changes only what its rule reads, so a failing test names the rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from certification.history import (
    Completeness,
    DayState,
    Effect,
    FaultEvidence,
    History,
    Run,
    RunKind,
    Snapshot,
    WireRequest,
)

DAY1, DAY2, OUTSIDE = "2026-03-01", "2026-03-02", "2026-04-01"
DAYS = (DAY1, DAY2)


def day(name: str = DAY1, *, expected: int = 3, missing: int = 0, surplus: int = 0, foreign: int = 0,
        actual: int | None = None) -> DayState:
    held = expected - missing + surplus + foreign if actual is None else actual
    return DayState(name, expected, held, missing, surplus, foreign, f"sha256:{name}:{held}")


def snap(after_run: int, *states: DayState, outside: int = 0, open_jobs: int = 0) -> Snapshot:
    return Snapshot(after_run, states or tuple(day(name) for name in DAYS), outside, open_jobs)


def run(index: int = 1, exit_code: int = 0, *, kind: RunKind | None = None, claims: Mapping[str, str] | None = None,
        timed_out: bool = False, problem: str | None = None) -> Run:
    chosen = kind if kind is not None else RunKind.FIRST if index == 1 else RunKind.RECOVERY
    return Run(index, chosen, exit_code, timed_out, float(index * 10), float(index * 10 + 5), dict(claims or {}),
               problem)


def request(seq: int, targets: Sequence[str] | None = (DAY1,), *, fence: str | None = None,
            endpoint: str = "sync_submit", at: float | None = None, run_index: int = 1,
            body_complete: bool = True) -> WireRequest:
    return WireRequest(seq=seq, at=float(seq) if at is None else at, run=run_index, endpoint=endpoint, method="POST",
                       targets=None if targets is None else tuple(targets),
                       target_source="unknown" if targets is None else "range", fence=fence, head_complete=True,
                       body_complete=body_complete, forwarded="yes" if body_complete else "no",
                       response_delivered=body_complete)


def effect(seq: int, days: Sequence[str] = (DAY1,), *, fence: str | None = None, rows: int = 3) -> Effect:
    return Effect(seq, "measurements", tuple(days), fence, rows)


def history(**changes: Any) -> History:
    """A clean first-run delivery of DAYS; keyword arguments replace its fields."""
    base = History(
        row_id="sync.none", sink="sink-under-test", universe=DAYS, expected_digest="sha256:expected",
        mutation_kind="partition_replace", fence_deduplicates=True,
        requests=(request(1, (DAY1,), fence="k1"), request(2, (DAY2,), fence="k2")),
        effects=(effect(1, (DAY1,), fence="k1"), effect(2, (DAY2,), fence="k2")),
        snapshots=(snap(1), snap(0)), runs=(run(1, 0),), fault=FaultEvidence("none", None, "no fault to fire"),
        completeness=Completeness(),
    )
    return replace(base, **changes)
