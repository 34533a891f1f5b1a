"""Planning benchmark: adaptive planner vs fixed-width windows on a seeded skewed source.

Seed "Industrial differentiation targets", axis "adaptive frozen-window utilization and checkpoint
correctness": a synthetic variable-volume source bounded by the mock.dataset-jobs@1 profile;
metric requests, limit violations, source gaps/overlaps, invalid checkpoint jumps; target fewer
requests than the fixed-width baseline and 0/0/0/0.

    python benchmarks/bench_planning.py            # full run
    python benchmarks/bench_planning.py --quick    # CI smoke run
    python benchmarks/bench_planning.py --json out.json

Plans compared, all on the same frozen day histogram and the same model sealer (exact decoded
bytes, a per-day compression ratio for wire bytes):

* adaptive: ``plan_children`` then measure/``refine`` until nothing is over a limit;
* fixed as is: windows of ``preferred_window_days`` (3), volume-blind; a window over a hard limit
  is a violation (that request would be refused);
* fixed repaired: the same windows bisected by days until each meets the same limits.

Frontier: for sampled completion orders of the adaptive children (10% of children failing, one
restart mid-way) and for every order of the first 7 children, the journal's
``contiguous_frontier`` must never cover an incomplete child and the promoted scope must be
gap-free; each breach counts as an invalid jump.

Exit status 1 only on a correctness failure (an adaptive violation, gap, overlap, invalid jump,
or a non-deterministic plan); request counts and timings are figures, never failures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict
from datetime import date
from pathlib import Path

from certification.bench.adaptive import frontier_breaches
from sink.compiler.loading import load_document
from sink.contracts.planning import ChildWindow, PlanningLimits
from sink.contracts.profile import OperationProfile
from sink.planning import PLANNER_ALGORITHM_VERSION, plan_children
from sink.planning.evaluation import (
    PlanAudit,
    audit_plan,
    bisect_until_within,
    fixed_width_children,
    plan_until_within_limits,
)
from sink.planning.limits import planning_limits
from sink.planning.skewed_source import SkewedSource, skewed_source

PROFILE = Path(__file__).resolve().parents[1] / "scenarios" / "profiles" / "mock.dataset-jobs@1.yaml"
MEDIANS = {"low": 2_000, "skewed": 12_000, "heavy": 30_000}


def compare(source: SkewedSource, limits: PlanningLimits) -> tuple[dict[str, PlanAudit], tuple[ChildWindow, ...], int]:
    buckets = source.buckets()
    adaptive, rounds = plan_until_within_limits(source.scope_from, source.scope_to, buckets, limits, source.measure)
    fixed = fixed_width_children(source.scope_from, source.scope_to, buckets, limits)
    repaired = bisect_until_within(fixed, buckets, limits, source.measure)
    audits = {
        name: audit_plan(plan, scope_from=source.scope_from, scope_to=source.scope_to, total_rows=source.total_rows,
                         limits=limits, measure=source.measure)
        for name, plan in (("adaptive", adaptive), ("fixed_as_is", fixed), ("fixed_repaired", repaired))
    }
    return audits, adaptive, rounds


def time_planning(limits: PlanningLimits, days: int, repeats: int) -> tuple[float, float, int]:
    """Median seconds of plan_children and of the plan/measure/refine loop over ``days`` days."""
    source = skewed_source(99, days, limits, median_rows=MEDIANS["skewed"])
    buckets = source.buckets()
    plan_times, loop_times = [], []
    children: tuple[ChildWindow, ...] = ()
    for _ in range(repeats):
        started = time.perf_counter()
        children = plan_children(source.scope_from, source.scope_to, buckets, limits)
        plan_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        plan_until_within_limits(source.scope_from, source.scope_to, buckets, limits, source.measure)
        loop_times.append(time.perf_counter() - started)
    return statistics.median(plan_times), statistics.median(loop_times), len(children)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed, fewer sampled orders (CI)")
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON to this file")
    args = parser.parse_args()
    profile = load_document(PROFILE, OperationProfile)
    limits = planning_limits(profile.limits, None)
    seeds = [1] if args.quick else [1, 2, 3, 4, 5]
    samples = 20 if args.quick else 300

    print(f"planner {PLANNER_ALGORITHM_VERSION}; profile {profile.id}@{profile.version}; "
          f"{args.days} days; seeds {seeds}; host {os.cpu_count()} CPU(s); mode {'quick' if args.quick else 'full'}")
    print(f"limits: max_rows={limits.max_rows} planning/max decoded={limits.planning_decoded_bytes}/"
          f"{limits.max_decoded_bytes} planning/max wire={limits.planning_wire_bytes}/{limits.max_wire_bytes} "
          f"window preferred/max={limits.preferred_window_days}/{limits.max_window_days} days")
    header = f"{'source':<8}{'seed':>5} {'plan':<15}{'requests':>9}{'ratio':>7}{'viol':>6}{'target':>8}" \
             f"{'gaps':>6}{'overl':>6}{'rounds':>7}{'orders':>8}{'jumps':>7}"
    print(header)
    failures: list[str] = []
    rows: list[dict[str, object]] = []
    summary = {"adaptive": 0, "fixed_as_is": 0, "fixed_repaired": 0}
    for label, median in MEDIANS.items():
        for seed in seeds:
            source = skewed_source(seed, args.days, limits, median_rows=median)
            audits, adaptive, rounds = compare(source, limits)
            again, _, _ = compare(source, limits)
            if again != audits or compare(source, limits)[1] != adaptive:
                failures.append(f"{label}/{seed}: the same input gave a different plan")
            replayed, jumps = frontier_breaches(adaptive, samples, seed)
            base = audits["fixed_repaired"].requests
            for name, audit in audits.items():
                summary[name] += audit.requests
                extra = (f"{rounds:>7}{replayed:>8}{jumps:>7}" if name == "adaptive" else "")
                print(f"{label:<8}{seed:>5} {name:<15}{audit.requests:>9}{audit.requests / base:>7.2f}"
                      f"{audit.hard_violations:>6}{audit.target_misses:>8}{audit.gaps:>6}{audit.overlaps:>6}{extra}")
                rows.append({"source": label, "seed": seed, "plan": name, **asdict(audit),
                             **({"refine_rounds": rounds, "orders": replayed, "invalid_jumps": jumps}
                                if name == "adaptive" else {})})
            adaptive_audit = audits["adaptive"]
            if (adaptive_audit.hard_violations, adaptive_audit.gaps, adaptive_audit.overlaps, jumps) != (0, 0, 0, 0):
                failures.append(f"{label}/{seed}: adaptive violations/gaps/overlaps/jumps "
                                f"{adaptive_audit.hard_violations}/{adaptive_audit.gaps}/{adaptive_audit.overlaps}/{jumps}")
    ten_years = (date(2035, 1, 1) - date(2025, 1, 1)).days
    plan_s, loop_s, children = time_planning(limits, ten_years, 3 if args.quick else 7)
    print(f"timing: plan_children over {ten_years} days ({children} children) {plan_s * 1000:.1f} ms; "
          f"plan+measure+refine loop {loop_s * 1000:.1f} ms (median)")
    print("total requests: " + ", ".join(f"{name}={count}" for name, count in summary.items()))
    fewer = summary["adaptive"] < summary["fixed_repaired"]
    print(f"target fewer requests than fixed width meeting the same limits: {'met' if fewer else 'MISSED'} "
          f"(ratio {summary['adaptive'] / summary['fixed_repaired']:.2f}); distribution-specific, not a failure")
    if args.json is not None:
        args.json.write_text(json.dumps({"planner": PLANNER_ALGORITHM_VERSION, "rows": rows, "totals": summary,
                                         "timing_ms": {"plan": plan_s * 1000, "loop": loop_s * 1000},
                                         "days_timed": ten_years, "correctness_failures": failures},
                                        indent=2, default=str) + "\n", encoding="utf-8")
    for failure in failures:
        print(f"CORRECTNESS FAILURE: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
