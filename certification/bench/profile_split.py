"""Where the sink's time goes: one extra, profiled delivery (cProfile), its own time grouped by area.

Profiling slows Python down several times over, so this run is never one of the timed ones; its
shares (not its seconds) say which part of the sink the time is spent in. Built-in functions are
attributed by name: ``sqlite3`` calls and ``fsync`` to the journal/durability, socket calls to the
transport.
"""

from __future__ import annotations

import pstats
from pathlib import Path

AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("journal", ("/sink/journal/", "sqlite3", "fsync", "/sink/runtime/journal_moves")),
    ("verification", ("/sink/payload/summary_digest", "/sink/payload/wire_rows", "/sink/runtime/verification")),
    ("transport", ("/sink/transport/", "/httpx/", "/httpcore/", "/h11/", "socket", "'send", "'recv", "ssl")),
    ("source_and_sealing", ("/sink/source/", "/sink/payload/", "/sink/preparation/", "/sink/planning/")),
    ("artifacts", ("/sink/artifacts/",)),
    ("runtime", ("/sink/runtime/",)),
    ("startup_and_other", ("",)),
)


def area_of(filename: str, function: str) -> str:
    key = f"{filename} {function}"
    for area, needles in AREAS:
        if any(needle in key for needle in needles):
            return area
    return "startup_and_other"


def split(profile: Path) -> dict[str, float]:
    """Share (0..1) of the profiled process's own time per area."""
    stats = pstats.Stats(str(profile))
    totals: dict[str, float] = {area: 0.0 for area, _ in AREAS}
    for (filename, _, function), row in stats.stats.items():  # type: ignore[attr-defined]
        totals[area_of(filename, function)] += float(row[2])
    whole = sum(totals.values()) or 1.0
    return {area: round(seconds / whole, 3) for area, seconds in totals.items()}
