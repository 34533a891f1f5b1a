"""Where the sink's time goes: one extra, profiled delivery (cProfile), its own time grouped by area.

Profiling slows Python down several times over, so this run is never one of the timed ones; its
shares (not its seconds) say which part of the sink the time is spent in.

A function's own time goes to the area its file names: the sink's packages, and the libraries
that do one area's work (``sqlite3`` calls and ``fsync`` are the journal's, httpcore, h11 and socket
calls the transport's, imports, module bodies, Typer and pydantic start-up). Code that belongs to
no area (built-ins such as ``isinstance``, ``dataclasses``, ``pathlib``, ``contextlib``, the sink's
shared helpers) is charged to whoever called it, in proportion to the time each caller spent in it
(its cumulative time through that caller; a recursive helper's inner calls are its outermost one's):
``isinstance`` called by the journal's codec is journal time. Charging it by its own name instead
put about 70 % of a resume in one "other" bucket that said nothing.
"""

from __future__ import annotations

import pstats
from collections import defaultdict
from pathlib import Path

Func = tuple[str, int, str]

AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("journal", ("/sink/journal/", "sqlite3", "fsync", "/sink/runtime/journal_moves")),
    ("verification", ("/sink/payload/summary_digest", "/sink/payload/wire_rows", "/sink/runtime/verification")),
    ("transport", ("/sink/transport/", "/httpx/", "/httpcore/", "/h11/", "socket", "'send", "'recv", "ssl")),
    ("source_and_sealing", ("/sink/source/", "/sink/payload/", "/sink/preparation/", "/sink/planning/")),
    ("artifacts", ("/sink/artifacts/",)),
    ("runtime", ("/sink/runtime/",)),
    ("startup", ("<frozen importlib", "/importlib/", "/typer/", "/click/", "/pydantic/", "/pydantic_core/",
                 "marshal.loads", "/sink/cli/")),
)
OTHER = "other"
"""Code no caller chain ties to an area (a thread's entry, a cycle of generic helpers)."""
INHERIT = "inherit"
"""``area_of``'s answer for code that belongs to no area: its callers' area decides."""


def area_of(filename: str, function: str) -> str:
    if function == "<module>":
        return "startup"  # a module body runs once, at import
    key = f"{filename} {function}"
    for area, needles in AREAS:
        if any(needle in key for needle in needles):
            return area
    return INHERIT


class _Attribution:
    def __init__(self, stats: dict[Func, tuple[int, int, float, float, dict[Func, tuple[float, ...]]]]) -> None:
        self._stats = stats
        self._memo: dict[Func, dict[str, float]] = {}

    def shares_of(self, func: Func) -> dict[str, float]:
        """How ``func``'s own time divides over the areas (fractions summing to 1)."""
        pending: list[Func] = [func]
        active: set[Func] = set()
        # Iterative depth-first resolution: caller chains of generic helpers can be deep.
        while pending:
            current = pending[-1]
            if current in self._memo:
                pending.pop()
                continue
            area = area_of(current[0], current[2])
            if area != INHERIT:
                self._memo[current] = {area: 1.0}
                pending.pop()
                continue
            callers = self._callers(current)
            unresolved = [c for c in callers if c not in self._memo and c not in active]
            if unresolved and current not in active:
                active.add(current)
                pending.extend(unresolved)
                continue
            self._memo[current] = self._combine(callers)
            active.discard(current)
            pending.pop()
        return self._memo[func]

    def _callers(self, func: Func) -> dict[Func, float]:
        entry = self._stats.get(func)
        if entry is None:
            return {}
        weights: dict[Func, float] = {}
        for caller, figures in entry[4].items():
            if caller == func:
                continue  # recursion: the outermost call's callers decide
            # cProfile's per-caller tuple: (calls, primitive calls, own time, cumulative time). The
            # cumulative time through each caller weighs it: for a recursive helper the outermost
            # call's own time is nearly nothing, its inner calls carry the time.
            weights[caller] = float(figures[3]) if len(figures) > 3 and figures[3] > 0 else float(figures[1]) * 1e-9
        return weights

    def _combine(self, callers: dict[Func, float]) -> dict[str, float]:
        total = sum(callers.values())
        if total <= 0:
            return {OTHER: 1.0}
        combined: dict[str, float] = defaultdict(float)
        for caller, weight in callers.items():
            for area, share in self._memo.get(caller, {OTHER: 1.0}).items():  # a caller in a cycle: other
                combined[area] += weight / total * share
        return dict(combined)


def split(profile: Path) -> dict[str, float]:
    """Share (0..1) of the profiled process's own time per area."""
    stats = pstats.Stats(str(profile)).stats  # type: ignore[attr-defined]
    attribution = _Attribution(stats)
    totals: dict[str, float] = {area: 0.0 for area, _ in AREAS}
    totals[OTHER] = 0.0
    for func, row in stats.items():
        for area, share in attribution.shares_of(func).items():
            totals[area] += float(row[2]) * share
    whole = sum(totals.values()) or 1.0
    return {area: round(seconds / whole, 3) for area, seconds in totals.items()}
