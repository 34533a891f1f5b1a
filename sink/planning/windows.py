"""Greedy day-window partition under caps: the one splitting rule of the planner.

A window is *feasible* when its width is within the width cap and either its rows and estimated
decoded bytes are within the caps, or it carries data on at most one day (a single receiver-atomic
day that alone exceeds a soft cap still needs one window, and the empty days next to it cost
nothing). Feasibility is hereditary (every sub-window of a feasible window is feasible), so
extending each window while the next day keeps it feasible yields the minimum number of windows
(the classic greedy argument: the greedy end is never left of any other partition's end).
"""

from __future__ import annotations

from dataclasses import dataclass

from sink.planning.days import DayTable


@dataclass(frozen=True, slots=True)
class Caps:
    width_days: int
    rows: int
    estimated_decoded_bytes: int
    """Cap on ``fixed_overhead_bytes + sum(day decoded bytes)`` of one window."""
    fixed_overhead_bytes: int


def feasible(table: DayTable, lo: int, hi: int, caps: Caps) -> bool:
    if hi - lo > caps.width_days:
        return False
    if table.data_days(lo, hi) <= 1:
        return True
    return (
        table.rows(lo, hi) <= caps.rows
        and caps.fixed_overhead_bytes + table.decoded(lo, hi) <= caps.estimated_decoded_bytes
    )


def greedy_windows(table: DayTable, lo: int, hi: int, caps: Caps) -> list[tuple[int, int]]:
    """Half-open day-index windows tiling ``[lo, hi)``, fewest possible under ``caps``."""
    windows: list[tuple[int, int]] = []
    start = lo
    while start < hi:
        end = start + 1  # one day is always a window: hard single-day checks ran before
        while end < hi and feasible(table, start, end + 1, caps):
            end += 1
        windows.append((start, end))
        start = end
    return windows
