"""``certify bench adaptive`` -> ``adaptive_frontier_benchmark.json`` (seed "Industrial
differentiation targets": adaptive frozen-window utilization and checkpoint correctness).

A seeded synthetic variable-volume source (``sink.planning.skewed_source``) under the
``mock.dataset-jobs@1`` profile's limits; three plans on the same frozen day histogram:

* ``adaptive``: ``plan_children`` then measure/``refine`` until nothing is over a limit;
* ``fixed_as_is``: volume-blind windows of the preferred width (a window over a hard limit is a
  violation: the receiver would refuse it);
* ``fixed_repaired``: the same windows bisected until each meets the limits (the fair baseline).

Checkpoint correctness: the adaptive children complete in every order of the first
``PERMUTED_CHILDREN`` children and in sampled orders of all of them (a tenth failing, a restart
half-way), and after every completion ``contiguous_frontier`` must cover only completed children
and promote a gap-free prefix; each breach is an invalid jump. Violations, gaps, overlaps and
invalid jumps of the adaptive plan are wrong results (non-zero exit); request counts are figures.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from pathlib import Path

from certification.bench.artifact import BenchResult
from sink.compiler.loading import load_document
from sink.contracts.planning import ChildWindow, PlanningLimits
from sink.contracts.profile import OperationProfile
from sink.journal.frontier import contiguous_frontier
from sink.planning import PLANNER_ALGORITHM_VERSION
from sink.planning.evaluation import (
    PlanAudit,
    audit_plan,
    bisect_until_within,
    fixed_width_children,
    plan_until_within_limits,
)
from sink.planning.limits import planning_limits
from sink.planning.skewed_source import SkewedSource, skewed_source

NAME = "adaptive_frontier"
PROFILE = Path(__file__).resolve().parents[2] / "scenarios" / "profiles" / "mock.dataset-jobs@1.yaml"
MEDIANS = {"low": 2_000, "skewed": 12_000, "heavy": 30_000}
PERMUTED_CHILDREN = 7
PLANS = ("adaptive", "fixed_as_is", "fixed_repaired")


def invalid_jumps(children: Sequence[ChildWindow], order: Sequence[int], failed: set[int], restart_at: int) -> int:
    """Breaches of the contiguous-frontier rule while ``children`` complete in ``order``."""
    start = children[0].scope_from
    completed: set[int] = set()
    stored: int | None = None
    breaches = 0
    for step, ordinal in enumerate(order):
        if ordinal in failed:
            continue
        completed.add(ordinal)
        flags = [(child.ordinal, child.ordinal in completed) for child in children]
        frontier = contiguous_frontier(flags, stored)
        if step == restart_at and contiguous_frontier(flags, frontier) != frontier:
            breaches += 1  # a restarted worker re-reading the stored frontier must land on the same one
        prefix = range(frontier + 1) if frontier is not None else range(0)
        breaches += sum(1 for ordinal_ in prefix if ordinal_ not in completed)
        promoted_days = sorted(
            (children[o].scope_from - start).days + day
            for o in prefix for day in range((children[o].scope_to - children[o].scope_from).days))
        breaches += promoted_days != list(range(len(promoted_days)))
        stored = frontier
    return breaches


def frontier_breaches(children: Sequence[ChildWindow], samples: int, seed: int) -> tuple[int, int]:
    """(orders replayed, invalid jumps): sampled orders of all children, every order of the first few."""
    rng = random.Random(seed)
    replayed = breaches = 0
    for _ in range(samples):
        order = list(range(len(children)))
        rng.shuffle(order)
        failed = {ordinal for ordinal in order if rng.random() < 0.1}
        breaches += invalid_jumps(children, order, failed, restart_at=len(order) // 2)
        replayed += 1
    head = children[:PERMUTED_CHILDREN]
    for permutation in itertools.permutations(range(len(head))):
        breaches += invalid_jumps(head, permutation, set(), restart_at=len(head) // 2)
        replayed += 1
    return replayed, breaches


def compare(source: SkewedSource, limits: PlanningLimits) -> tuple[dict[str, PlanAudit], tuple[ChildWindow, ...]]:
    buckets = source.buckets()
    adaptive, _ = plan_until_within_limits(source.scope_from, source.scope_to, buckets, limits, source.measure)
    fixed = fixed_width_children(source.scope_from, source.scope_to, buckets, limits)
    repaired = bisect_until_within(fixed, buckets, limits, source.measure)
    plans = {"adaptive": adaptive, "fixed_as_is": fixed, "fixed_repaired": repaired}
    audits = {name: audit_plan(plan, scope_from=source.scope_from, scope_to=source.scope_to,
                               total_rows=source.total_rows, limits=limits, measure=source.measure)
              for name, plan in plans.items()}
    return audits, tuple(adaptive)


def run(*, days: int, seeds: Sequence[int], samples: int) -> BenchResult:
    profile = load_document(PROFILE, OperationProfile)
    limits = planning_limits(profile.limits, None)
    result = BenchResult(NAME, {"profile": f"{profile.id}@{profile.version}", "planner": PLANNER_ALGORITHM_VERSION,
                                "days": days, "seeds": list(seeds), "sampled_orders": samples,
                                "permuted_children": PERMUTED_CHILDREN})
    totals = dict.fromkeys(PLANS, 0)
    lines: dict[str, list[tuple[float, float]]] = {name: [] for name in PLANS}
    rows: list[dict[str, object]] = []
    for label, median in MEDIANS.items():
        per_plan = dict.fromkeys(PLANS, 0)
        for seed in seeds:
            source = skewed_source(seed, days, limits, median_rows=median)
            audits, adaptive = compare(source, limits)
            again, adaptive_again = compare(source, limits)
            result.check(f"{label}.{seed}.deterministic", again == audits and adaptive_again == adaptive,
                         "the same frozen histogram gives the same plan")
            replayed, jumps = frontier_breaches(adaptive, samples, seed)
            audit = audits["adaptive"]
            result.check(f"{label}.{seed}.adaptive", (audit.hard_violations, audit.gaps, audit.overlaps, jumps)
                         == (0, 0, 0, 0), f"violations {audit.hard_violations}, gaps {audit.gaps}, overlaps "
                                          f"{audit.overlaps}, invalid jumps {jumps} over {replayed} orders")
            for name, plan_audit in audits.items():
                per_plan[name] += plan_audit.requests
                rows.append({"source": label, "seed": seed, "plan": name, "requests": plan_audit.requests,
                             "hard_violations": plan_audit.hard_violations, "gaps": plan_audit.gaps,
                             "overlaps": plan_audit.overlaps, "target_misses": plan_audit.target_misses,
                             **({"orders": replayed, "invalid_jumps": jumps} if name == "adaptive" else {})})
        for name in PLANS:
            totals[name] += per_plan[name]
            lines[name].append((float(median), float(per_plan[name])))
    result.figures = {"rows": rows, "total_requests": totals,
                      "fewer_requests_than_fixed_width": totals["adaptive"] < totals["fixed_repaired"],
                      "targets": {"requests": "adaptive < fixed_repaired",
                                  "violations_gaps_overlaps_invalid_jumps": "0, 0, 0, 0"}}
    result.ratio("adaptive_over_fixed_requests", totals["adaptive"] / max(totals["fixed_repaired"], 1),
                 tolerance=0.05, better="lower")
    result.plot("adaptive_requests", title="Requests per plan over daily volume", x_label="median rows per day",
                y_label=f"requests ({len(seeds)} seed(s), {days} days)", lines=lines)
    return result
