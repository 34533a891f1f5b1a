"""The expected duration of one sink's run of a row: the lanes start the longest runs first.

Scheduling only, never a verdict: the matrix is the same whatever the order. Why it matters: on the
full catalog the lanes are busy for about ten minutes, and a 35-second run that starts in the last
minute (a request the receiver holds 34 s, a connect that never completes) is the run's tail. The
estimate is what the row states, not a measurement of an earlier run, so a first run on a fresh
machine is ordered the same as any other:

* the family's pace per sink run: an async job is polled until it ends;
* the certified sink's runs: a row that may end blocked or with an operator step is rerun, inspected
  and reconciled before it is judged;
* a wait the fault plan states in seconds (a delay or hold, a key retention the harness waits out),
  and a TCP toxic that slows the wire (latency, slicer, bandwidth, timeout);
* a connect that never completes: every sink sits out its connect timeout.

The weights are coarse on purpose (seconds, from the full catalog's timings in
docs/certification.md): only the order of long and short runs matters.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from certification.scenarios import Row

_STATED_WAITS = frozenset({"seconds", "timeout_seconds", "retention_seconds"})
_CONNECT_TIMEOUT_S = 20.0
_SLOW_TOXICS = {"latency": 8.0, "slicer": 20.0, "bandwidth": 6.0, "timeout": 6.0}
"""A toxic slows every sink's wire alike; a slicer on the upload can take a baseline half a minute."""
_RUN_S = {"async_bulk_job": 7.0, "sync_batch": 3.5}
"""One sink process's run of a row, polls included, without the fault's own waits."""
_RUNS_BY_ENDING = {"first_run": 1, "recovery": 2, "blocked": 5, "operator": 5}
"""How many runs the certified sink is given when the row may end this way (a blocked or operator
ending is rerun, inspected and reconciled before it is judged)."""
_BASELINE_SHARE_OF_WAITS = 0.3
"""A baseline gives up on a held answer after its own short timeout; it rarely sits out a stated wait."""


def expected_seconds(row: Row, role: str) -> float:
    """A coarse guess of how long ``role``'s sink takes on ``row``, in seconds."""
    fault = row.fault
    run = _RUN_S.get(row.family, _RUN_S["sync_batch"])
    waits = sum(_stated_waits(fault.model_dump()))
    wire = _SLOW_TOXICS.get(str(fault.toxic.get("type")), 0.0) if fault.toxic is not None else 0.0
    wire += _CONNECT_TIMEOUT_S if fault.type == "connect_timeout" else 0.0
    if role == "certified":
        runs = max(_RUNS_BY_ENDING.get(ending, 1) for ending in row.expect.end)
        return run * runs + waits + wire
    return run + waits * _BASELINE_SHARE_OF_WAITS + wire


def _stated_waits(document: Any) -> Iterator[float]:
    """Every number a fault plan states under a key that names seconds, however deep."""
    if isinstance(document, Mapping):
        for key, value in document.items():
            if key in _STATED_WAITS and isinstance(value, int | float) and not isinstance(value, bool):
                yield float(value)
            else:
                yield from _stated_waits(value)
    elif isinstance(document, list | tuple):
        for value in document:
            yield from _stated_waits(value)
