"""Kill tests for sink/planning/planner.py (mutation gate, tools/mutation): each limit's own
refusal with its exact message, the type check of a limit, and every boundary that is allowed."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from pl_builders import START, buckets_from, limits

from sink.planning import EMPTY_BOUNDARY_RULE, InvalidPlanningInput, ScopeExceedsLimit, plan_children

LIMIT_NAMES = ["max_rows", "max_decoded_bytes", "planning_decoded_bytes", "max_wire_bytes", "planning_wire_bytes",
               "preferred_window_days", "max_window_days"]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "planning.md"


def _plan(**overrides: object) -> object:
    return plan_children(START, START + timedelta(days=2), [], limits(**overrides))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", LIMIT_NAMES)
def test_each_limit_must_be_positive_and_says_which(name: str) -> None:
    with pytest.raises(InvalidPlanningInput) as refused:
        _plan(**{name: 0})
    assert str(refused.value) == f"{name} must be a positive integer"


@pytest.mark.parametrize("value", [True, 2.5], ids=["bool", "float"])
def test_a_limit_that_is_not_an_integer_is_refused(value: object) -> None:
    with pytest.raises(InvalidPlanningInput) as refused:
        _plan(max_rows=value)
    assert str(refused.value) == "max_rows must be a positive integer"


def test_targets_may_equal_their_hard_limits() -> None:
    children = plan_children(START, START + timedelta(days=4), buckets_from([(1, 10)] * 4),
                             limits(planning_decoded_bytes=10_000, planning_wire_bytes=4_000,
                                    preferred_window_days=4))
    assert [(c.scope_from, c.scope_to) for c in children] == [(START, START + timedelta(days=4))]


def test_a_day_with_exactly_max_rows_is_planned_and_one_more_is_refused() -> None:
    children = plan_children(START, START + timedelta(days=1), buckets_from([(1000, 10)]), limits())
    assert [(c.row_start, c.row_end) for c in children] == [(0, 1000)]
    with pytest.raises(ScopeExceedsLimit):
        plan_children(START, START + timedelta(days=1), buckets_from([(1001, 10)]), limits())


def test_the_empty_boundary_rule_is_the_documented_one() -> None:
    # The rule text is shown to operators; its opening clause is the one docs/planning.md states.
    opening = EMPTY_BOUNDARY_RULE.split(",")[0]
    documented = re.sub(r"\s+", " ", DOCS.read_text(encoding="utf-8").replace("`", ""))
    assert opening.startswith("A parent with zero rows")
    assert opening in documented
