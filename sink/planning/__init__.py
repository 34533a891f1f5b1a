"""Adaptive planner and coverage proof (pure; seed: "Frozen source boundary and adaptive planning").

``plan_children`` tiles a frozen parent's scope with the fewest child windows that meet the
profile limits; ``refine`` splits children whose sealed measurements break a limit;
``coverage_proof`` proves the tiling gap-free and overlap-free. See docs/planning.md.
"""

from sink.planning.coverage import (
    COVERAGE_PROOF_VERSION,
    CoverageProof,
    child_descriptor,
    coverage_proof,
    verify_coverage,
)
from sink.planning.errors import CoverageError, InvalidPlanningInput, ScopeExceedsLimit
from sink.planning.planner import EMPTY_BOUNDARY_RULE, PLANNER_ALGORITHM_VERSION, plan_children
from sink.planning.refine import refine

__all__ = [
    "COVERAGE_PROOF_VERSION",
    "EMPTY_BOUNDARY_RULE",
    "PLANNER_ALGORITHM_VERSION",
    "CoverageError",
    "CoverageProof",
    "InvalidPlanningInput",
    "ScopeExceedsLimit",
    "child_descriptor",
    "coverage_proof",
    "plan_children",
    "refine",
    "verify_coverage",
]
