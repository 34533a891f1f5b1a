"""Kill tests for sink/planning/coverage.py (mutation gate, tools/mutation): the proof's canonical
form is an identity input (``complete_coverage_proof`` of ``parent_plan_digest``), so every field,
its name, the version and the purpose label are pinned, and each window bound alone moves the digest."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from sink.contracts.planning import ChildWindow
from sink.planning import coverage_proof

D = date(2026, 1, 1)
PLAN = (ChildWindow(0, D, date(2026, 1, 4), 0, 10, 0), ChildWindow(1, date(2026, 1, 4), date(2026, 1, 9), 10, 25, 0))
PROOF = coverage_proof(PLAN, D, date(2026, 1, 9), 25)

# Written from the documented format, not read back from the code.
CANONICAL = {
    "version": "restproof.coverage_proof.v1",
    "scope_from": "2026-01-01",
    "scope_to": "2026-01-09",
    "total_rows": 25,
    "empty_boundary": False,
    "windows": [["2026-01-01", "2026-01-04", 0, 10], ["2026-01-04", "2026-01-09", 10, 25]],
}
# Pinned once: a change means every admitted parent's plan digest changes (bump the version).
GOLDEN_DIGEST = "sha256:4dee568f5ad8bd9dc0afcf02f7390bbfdc74d9f74e6f1ebad5ed6eccfea55dc4"


def test_canonical_form_is_pinned() -> None:
    assert PROOF.canonical() == CANONICAL


def test_digest_is_pinned() -> None:
    assert PROOF.digest == GOLDEN_DIGEST


def test_every_window_bound_alone_changes_the_digest() -> None:
    lo, hi, start, end = PROOF.windows[1]
    variants = [(date(2026, 1, 5), hi, start, end), (lo, date(2026, 1, 10), start, end),
                (lo, hi, 11, end), (lo, hi, start, 26)]
    digests = {replace(PROOF, windows=(PROOF.windows[0], w)).digest for w in variants}
    assert len(digests) == len(variants) and PROOF.digest not in digests


def test_empty_boundary_is_part_of_the_proof() -> None:
    empty = coverage_proof((ChildWindow(0, D, date(2026, 1, 2), 0, 0, 0),), D, date(2026, 1, 2), 0)
    assert empty.empty_boundary is True
    assert empty.canonical() == {**CANONICAL, "scope_to": "2026-01-02", "total_rows": 0, "empty_boundary": True,
                                 "windows": [["2026-01-01", "2026-01-02", 0, 0]]}
