"""Where a ``certify run``'s time went: printed after the grid and stated in the summary.

CPU is split between the sinks' own processes (per sink, from the kernel's accounting when each run
is reaped: ``Finished.cpu_s``) and everything else the run started or did (the receivers, proxies,
wire taps, bundle exports, the identity matrix and the judge itself). Lane time is the wall time
rows kept a lane busy, per catalog: what more lanes can overlap, unlike CPU.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from certification.verdicts import RowOutcome

SLOWEST = 5


def time_spent(outcomes: Sequence[RowOutcome], *, wall: float, cpu: float) -> dict[str, Any]:
    sink_cpu: dict[str, float] = defaultdict(float)
    started: dict[str, dict[str, int]] = defaultdict(lambda: {"processes": 0, "warm": 0})
    lane: dict[str, float] = defaultdict(float)
    per_row: list[tuple[float, str]] = []
    for outcome in outcomes:
        row_seconds = 0.0
        for result in outcome.results:
            sink_cpu[result.sink] += result.cpu_seconds
            started[result.sink]["processes"] += result.processes
            started[result.sink]["warm"] += result.warm_processes
            row_seconds += result.seconds
        lane[outcome.row.catalog.stem] += row_seconds
        per_row.append((row_seconds, outcome.row.row_id))
    sinks = sum(sink_cpu.values())
    slowest = sorted(per_row, key=lambda item: (-item[0], item[1]))[:SLOWEST]
    return {
        "wall": round(wall, 1), "cpu": round(cpu, 1),
        "sink_cpu": {name: round(value, 1) for name, value in sorted(sink_cpu.items())},
        "sink_processes": {name: dict(counts) for name, counts in sorted(started.items())},
        "other_cpu": round(max(cpu - sinks, 0.0), 1),
        "lane_seconds_by_catalog": {name: round(value, 1) for name, value in sorted(lane.items(), key=lambda i: -i[1])},
        "slowest_rows": [{"row": row, "seconds": round(seconds, 1)} for seconds, row in slowest],
    }


def summary_facts(spent: dict[str, Any]) -> dict[str, Any]:
    """What the summary states: ``seconds`` stays the run's wall and CPU (numbers, as readers of
    older evidence expect), ``time_spent`` holds the whole breakdown."""
    return {"seconds": {"wall": spent["wall"], "cpu": spent["cpu"]}, "time_spent": spent}


def _started(counts: dict[str, int] | None) -> str:
    if not counts or not counts.get("processes"):
        return ""
    warm = f", {counts['warm']} forked warm" if counts.get("warm") else ""
    return f" ({counts['processes']} processes{warm})"


def describe(spent: dict[str, Any]) -> str:
    """One paragraph for the terminal."""
    processes = spent.get("sink_processes", {})
    sinks = ", ".join(f"{name} {value:.0f} s{_started(processes.get(name))}"
                      for name, value in spent["sink_cpu"].items())
    lanes = ", ".join(f"{name} {value:.0f} s" for name, value in list(spent["lane_seconds_by_catalog"].items())[:6])
    slow = ", ".join(f"{item['row']} {item['seconds']:.0f} s" for item in spent["slowest_rows"])
    return (f"time: {spent['wall']:.0f} s wall, {spent['cpu']:.0f} s CPU: sink processes {sinks}; receivers, "
            f"proxies, exports and the judge {spent['other_cpu']:.0f} s. Lane time by catalog: {lanes}. "
            f"Slowest rows (all sinks): {slow}")
