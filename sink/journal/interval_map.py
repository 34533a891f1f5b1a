"""Normalised interval map of the highest applied generation per effect-conflict domain.

Seed ("Replacement generation and overlap fence"): a fully applied replacement raises, under the
domain lock, a normalised non-overlapping map (domain, conflict_scope_range, highest_applied_generation).
A January generation never stales a non-overlapping February one; the map never lowers.
Pure functions over half-open [start, end) ranges; both adapters store the result row by row.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from sink.journal.records import GenerationKey, ScopeRange

Interval = tuple[ScopeRange, GenerationKey]


def apply_generation(intervals: Sequence[Interval], scope: ScopeRange, generation: GenerationKey) -> list[Interval]:
    """Raise every point of ``scope`` to at least ``generation``; return the normalised map.

    The input must itself be normalised (sorted, non-overlapping). The output is sorted by start,
    has no overlaps, and merges touching neighbours that carry the same generation.
    """
    bounds = sorted({scope.start, scope.end, *(s.start for s, _ in intervals), *(s.end for s, _ in intervals)})
    segments: list[Interval] = []
    for lo, hi in itertools.pairwise(bounds):
        piece = ScopeRange(lo, hi)
        best: GenerationKey | None = None
        for existing, gen in intervals:
            if existing.overlaps(piece):
                best = gen if best is None else max(best, gen)
        if scope.overlaps(piece):
            best = generation if best is None else max(best, generation)
        if best is not None:
            segments.append((piece, best))
    return _coalesce(segments)


def _coalesce(segments: list[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for scope, gen in segments:
        if merged and merged[-1][1] == gen and merged[-1][0].end == scope.start:
            merged[-1] = (ScopeRange(merged[-1][0].start, scope.end), gen)
        else:
            merged.append((scope, gen))
    return merged


def highest_overlapping(intervals: Sequence[Interval], scope: ScopeRange) -> GenerationKey | None:
    """Highest applied generation anywhere inside ``scope``, or None when nothing was applied there."""
    found = [gen for existing, gen in intervals if existing.overlaps(scope)]
    return max(found) if found else None


def bounding_scope(scopes: Iterable[ScopeRange]) -> ScopeRange:
    """The smallest half-open range covering every scope (one overlap query for many children)."""
    listed = list(scopes)
    return ScopeRange(min(s.start for s in listed), max(s.end for s in listed))


def is_normalised(intervals: Sequence[Interval]) -> bool:
    """Sorted, non-overlapping, and no touching neighbours with the same generation."""
    for (left, left_gen), (right, right_gen) in itertools.pairwise(intervals):
        if left.end > right.start:
            return False
        if left.end == right.start and left_gen == right_gen:
            return False
    return True
