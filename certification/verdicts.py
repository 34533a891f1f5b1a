"""Row and run verdicts, computed in one place from the checkers' results (pure).

Per row and sink:

* the **certified** sink is ``FAIL`` when any checker is invalid (a safety violation, or the row was
  not exercised), ``UNVERIFIED`` when none is invalid but one cannot tell (a witness with a gap, a
  live receiver whose truth cannot be read), ``FAIL`` when its ending is not one the row accepts,
  ``PASS`` otherwise;
* a **baseline** is ``CAUGHT`` where the row requires it to be caught duplicating and it was,
  ``NOT_CAUGHT`` where it was not (the fault was not real: the run is invalid), ``OBSERVED`` elsewhere;
* ``N/A``: the row's fault does not apply to the sink (a crash point of a sink without failpoints).

The run's verdict: ``INVALID`` when a required baseline was not caught, else ``FAIL`` when a row of the
certified sink failed, else ``UNVERIFIED`` when a row was unverified, else ``PASS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from certification.checkers import CheckResult, Counters, Status, compose
from certification.history import Ending, History
from certification.scenarios import Expect, Row

PASS, FAIL, UNVERIFIED, NOT_APPLICABLE = "PASS", "FAIL", "UNVERIFIED", "N/A"
CAUGHT, NOT_CAUGHT, OBSERVED = "CAUGHT", "NOT_CAUGHT", "OBSERVED"


@dataclass(frozen=True, slots=True)
class SinkRowResult:
    sink: str
    role: str
    verdict: str
    counters: Counters | None
    exit_codes: tuple[int, ...]
    history_digest: str | None
    seconds: float
    reasons: tuple[str, ...] = ()
    history: History | None = field(default=None, compare=False)
    ending: Ending | None = None
    checks: tuple[CheckResult, ...] = ()
    cpu_seconds: float = 0.0
    """CPU of the sink's own processes on this row (``Finished.cpu_s``): where the time goes."""
    processes: int = 0
    warm_processes: int = 0
    """Of ``processes``, those forked from a warm server (``Finished.warm``)."""


@dataclass(frozen=True, slots=True)
class RowOutcome:
    row: Row
    results: tuple[SinkRowResult, ...]


def certified_verdict(results: Sequence[CheckResult], ending: Ending, expect: Expect,
                      stated: Sequence[str] = ()) -> tuple[str, tuple[str, ...]]:
    reasons = [f"{result.name}: {reason}" for result in results if result.status is Status.INVALID
               for reason in result.reasons]
    if reasons:
        return FAIL, tuple(reasons)
    if compose(results) is Status.UNKNOWN:
        return UNVERIFIED, tuple(f"{result.name}: {reason}" for result in results
                                 if result.status is Status.UNKNOWN for reason in result.reasons)
    if ending not in expect.end:
        accepted = ", ".join(end.value for end in expect.end)
        said = f" (its last run stated {', '.join(stated)})" if stated else ""
        return FAIL, (f"ending: {ending.value}, where this row accepts {accepted}{said}",)
    return PASS, ()


def baseline_verdict(counters: Counters, must_be_caught: bool) -> tuple[str, tuple[str, ...]]:
    if not must_be_caught:
        return OBSERVED, ()
    if counters.duplicates > 0:
        return CAUGHT, ()
    return NOT_CAUGHT, ("a baseline that must duplicate here did not: the fault was not real",)


def _totals(outcomes: Sequence[RowOutcome]) -> dict[str, dict[str, int]]:
    totals: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        for result in outcome.results:
            entry = totals.setdefault(result.sink, {"rows": 0, **dict.fromkeys(Counters(0, 0, 0, 0).as_dict(), 0)})
            if result.counters is None:
                continue
            entry["rows"] += 1
            for name, value in result.counters.as_dict().items():
                entry[name] += value
            entry[result.verdict.lower()] = entry.get(result.verdict.lower(), 0) + 1
    return totals


def run_summary(outcomes: Sequence[RowOutcome], certified: str) -> dict[str, Any]:
    not_caught = [f"{o.row.row_id}:{r.sink}" for o in outcomes for r in o.results if r.verdict == NOT_CAUGHT]
    certified_results = [(o.row.row_id, r) for o in outcomes for r in o.results if r.sink == certified]
    failed = [row_id for row_id, result in certified_results if result.verdict == FAIL]
    unverified = [row_id for row_id, result in certified_results if result.verdict == UNVERIFIED]
    endings: dict[str, int] = {}
    for _, result in certified_results:
        if result.ending is not None:
            endings[result.ending.value] = endings.get(result.ending.value, 0) + 1
    valid = not not_caught
    verdict = "INVALID" if not valid else FAIL if failed else UNVERIFIED if unverified else PASS
    return {"certified_sink": certified, "totals": _totals(outcomes), "valid": valid,
            "baseline_not_caught": not_caught, "failed_rows": failed, "unverified_rows": unverified,
            "endings": dict(sorted(endings.items())), "verdict": verdict}
