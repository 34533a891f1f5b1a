"""``certify bench throughput``: the sink under test against a naive httpx loop posting the same
sealed payloads, in the same run, alternating (issue 9 "Benchmark", issue 13).

Per source size and round, the measured deliveries from an empty receiver ledger, their order
alternating between rounds so that machine drift hits each alike:

* ``sink``: the sink's whole ``run`` (freeze, seal, admit, deliver, verify);
* ``reference-delivery`` (the bundled reference sink only): the same sink delivering children it
  sealed and admitted in an untimed first run (stopped at a failpoint before anything was sent),
  through ``delivery resume``: journal, markers, leases, fences and verification, nothing else;
* ``naive-loop``: a plain httpx loop posting the ``delivery bundle`` bodies (no durability);
* ``reference-idle`` and ``naive-idle`` (with the reference sink, from ``MIN_SPLIT_CHILDREN``
  children): each side's fixed cost, a resume of a parent already delivered and the loop over an
  empty bundle; they send nothing, and split each side's CPU into start-up and CPU per child
  (``cpu_split``).

Ratios: ``delivery_rows_per_s`` = reference-delivery ÷ naive loop (issue 9's target >= 0.9) and
``end_to_end_rows_per_s`` = the sink's run ÷ (bundle export + naive loop), both rows/s, wall clock.
The receiver keeps only its ledger (``storage: ledger_only``: every row is still decoded, counted
and digested, none is stored), so that it is not what limits both. Where the time goes: CPU
seconds of the sink process and of the receiver process for each
delivery, and one extra profiled delivery's shares per area (``profile_split``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from certification.bench import profile_split, workspace
from certification.bench.artifact import BenchResult
from certification.bench.deliveries import Delivery, DeliveryBench, delivery_bench
from certification.sinks import SinkSpec

NAME = "throughput"
CHILD_BYTES = 64_000_000
MIN_CHILD_BYTES = 20_000
"""The smallest child `--child-bytes` takes: about 50 rows per day of the synthetic source."""
TOLERANCE = 0.3
"""Wall-clock ratios on a shared machine move by tens of percent between runs (CPU ratios less)."""
QUICK_TOLERANCE = 0.5
"""At CI sizes process start-up dominates and the machine is shared: a wider band for wall clock."""


LABELS = ("sink", "reference-delivery", "reference-idle", "naive-idle", "naive-loop")
"""One round's measured deliveries, in this order on even rounds and reversed on odd ones."""
REFERENCE_ONLY = frozenset({"reference-delivery", "reference-idle", "naive-idle"})
"""Measured for the bundled reference sink only (``delivery resume`` is its command)."""
MIN_SPLIT_CHILDREN = 10
"""The idle runs (and the CPU split) need this many children: with a few 64 MB children a cost
per child is noise, and the reference's idle run delivers the whole source once more untimed."""
IDLE = frozenset({"reference-idle", "naive-idle"})
"""Fixed-cost runs: they send nothing, so only their times mean something."""
DELIVERY_FIELDS = ("rows_per_s", "mb_per_s", "wall_s", "sink_cpu_s", "receiver_cpu_s", "peak_rss_mib")
IDLE_FIELDS = ("wall_s", "sink_cpu_s", "peak_rss_mib")


def _median(deliveries: Sequence[Delivery], field: str) -> float:
    return statistics.median(float(d.figures()[field]) for d in deliveries)


def _cpu(deliveries: Sequence[Delivery]) -> list[float]:
    return [d.measured.cpu_s for d in deliveries]


def cpu_split(runs: Mapping[str, Sequence[Delivery]], *, children: int) -> dict[str, float]:
    """Where the delivering process's CPU goes, both sides measured in the same rounds:

    * the paired ratio, reference delivery ÷ naive loop of the same round (min, median, max), so
      a reader sees whether ``delivery_sink_cpu`` (the ratio of the medians) clears a target or
      only straddles it;
    * each side's fixed cost (its idle run: start-up, nothing sent) and its CPU per child
      ((median delivery - median idle) ÷ children), and the ratio of the per-child costs."""
    reference, loop = _cpu(runs["reference-delivery"]), _cpu(runs["naive-loop"])
    paired = [ref / max(naive, 1e-3) for ref, naive in zip(reference, loop, strict=True)]
    split = {"reference-delivery.paired_cpu_ratio.min": round(min(paired), 3),
             "reference-delivery.paired_cpu_ratio.median": round(statistics.median(paired), 3),
             "reference-delivery.paired_cpu_ratio.max": round(max(paired), 3)}
    per_child: dict[str, float] = {}
    for side, idle in (("reference-delivery", "reference-idle"), ("naive-loop", "naive-idle")):
        fixed = statistics.median(_cpu(runs[idle]))
        per_child[side] = (statistics.median(_cpu(runs[side])) - fixed) / max(children, 1)
        split[f"{side}.fixed_cpu_s"] = round(fixed, 3)
        split[f"{side}.per_child_cpu_ms"] = round(1000 * per_child[side], 3)
    if per_child["naive-loop"] > 0:
        split["per_child_cpu_ratio"] = round(per_child["reference-delivery"] / per_child["naive-loop"], 3)
    return split


def _profiled_shares(result: BenchResult, bench: DeliveryBench, work: Path) -> dict[str, float]:
    """One untimed reference delivery under cProfile: the shares of its own CPU time per area. A
    profile that was asked for and not written fails a check: a silently missing split once hid
    that the profiled process never wrote its stats."""
    stats = work / "delivery.pstats"
    delivery = bench.reference_delivery_only(profile=stats)
    written = delivery.ok and stats.exists()
    result.check(f"{bench.rows}.profile", written,
                 "profiled delivery: stats written" if written else
                 f"profiled delivery: exit {delivery.measured.exit_code}, {delivery.ledger_detail}, "
                 f"stats {'written' if stats.exists() else 'missing'}")
    return profile_split.split(stats) if written else {}


def _one_size(result: BenchResult, spec: SinkSpec, bench: DeliveryBench, *, rounds: int, work: Path,
              profile: bool) -> dict[str, float]:
    reference = spec.name == "reference"
    runs: dict[str, list[Delivery]] = {label: [] for label in LABELS}
    measure: dict[str, Callable[[], Delivery]] = {
        "sink": lambda: bench.sink(spec), "reference-delivery": bench.reference_delivery_only,
        "reference-idle": bench.reference_idle, "naive-idle": bench.naive_idle,
        "naive-loop": lambda: bench.naive("loop")}
    split = reference and len(bench.bundle["children"]) >= MIN_SPLIT_CHILDREN
    for index in range(rounds):
        for label in LABELS if index % 2 == 0 else LABELS[::-1]:
            if (reference or label not in REFERENCE_ONLY) and (split or label not in IDLE):
                runs[label].append(measure[label]())
    rows = bench.rows
    for label, deliveries in runs.items():
        for number, delivery in enumerate(deliveries):
            result.check(f"{rows}.{label}.{number}", delivery.ok,
                         f"exit {delivery.measured.exit_code}; {delivery.ledger_detail}")
    export = bench.bundle_export
    summary: dict[str, float] = {"rows": rows, "wire_mb": round(bench.wire_bytes / 1e6, 3),
                                 "children": len(bench.bundle["children"]),
                                 "bundle_export_wall_s": round(export.wall_s, 3),
                                 "bundle_export_cpu_s": round(export.cpu_s, 3)}
    for label, deliveries in runs.items():
        if not deliveries:
            continue
        fields = IDLE_FIELDS if label in IDLE else DELIVERY_FIELDS
        for field in fields:
            summary[f"{label}.{field}"] = round(_median(deliveries, field), 3)
    naive_wall = summary["naive-loop.wall_s"]
    summary["naive-end-to-end.rows_per_s"] = round(rows / (export.wall_s + naive_wall), 1)
    if split:
        summary.update(cpu_split(runs, children=len(bench.bundle["children"])))
    if reference and profile:
        for area, share in _profiled_shares(result, bench, work).items():
            summary[f"reference-delivery.profile_share.{area}"] = share
    return summary


def run(spec: SinkSpec, *, sizes: Sequence[int], rounds: int, work: Path, profile: bool = True,
        wall_tolerance: float = TOLERANCE, child_bytes: int = CHILD_BYTES) -> BenchResult:
    """``child_bytes``: the profile's child size. The default puts a whole source in one or a few
    children (throughput per byte); a small one (60 000: one request per ~300 rows) makes the pair
    weigh the per-request cost, what ``delivery_sink_cpu`` then compares."""
    result = BenchResult(NAME, {"sink": spec.name, "rows": list(sizes), "rounds": rounds,
                                "child_bytes": child_bytes,
                                "receiver": "mock-receiver bench-batches, storage: ledger_only"})
    per_size: dict[int, dict[str, float]] = {}
    for rows in sizes:
        size = workspace.size_for_rows(rows, child_bytes)
        with delivery_bench(work / f"rows{rows}", size, child_bytes=child_bytes, ledger_only=True) as bench:
            per_size[bench.rows] = _one_size(result, spec, bench, rounds=rounds, work=work / f"rows{rows}",
                                            profile=profile)
            result.parameters["bytecode"] = bench.bytecode
    result.figures = {"by_rows": {str(rows): figures for rows, figures in per_size.items()},
                      "targets": {"delivery_rows_per_s_ratio": ">= 0.9", "peak_rss_mib": "<= 150 (64 MB children)"}}
    largest = per_size[max(per_size)]
    if "reference-delivery.rows_per_s" in largest:
        result.ratio("delivery_rows_per_s", largest["reference-delivery.rows_per_s"] / largest["naive-loop.rows_per_s"],
                     tolerance=wall_tolerance, better="higher")
        result.ratio("delivery_sink_cpu", largest["reference-delivery.sink_cpu_s"] /
                     max(largest["naive-loop.sink_cpu_s"], 1e-3), tolerance=TOLERANCE, better="lower")
    result.ratio("end_to_end_rows_per_s", largest["sink.rows_per_s"] / largest["naive-end-to-end.rows_per_s"],
                 tolerance=wall_tolerance, better="higher")
    lines = {label: [(float(rows), f[f"{label}.rows_per_s"]) for rows, f in sorted(per_size.items())
                     if f"{label}.rows_per_s" in f]
             for label in ("sink", "reference-delivery", "naive-loop", "naive-end-to-end")}
    result.plot("throughput_rows_per_s", title="Throughput over source size", x_label="source rows",
                y_label="rows/s (wall clock)", lines={k: v for k, v in lines.items() if v})
    rss = {label: [(float(rows), f[f"{label}.peak_rss_mib"]) for rows, f in sorted(per_size.items())
                   if f"{label}.peak_rss_mib" in f] for label in ("sink", "reference-delivery", "naive-loop")}
    result.plot("throughput_peak_rss_mib", title="Peak RSS of the delivering process", x_label="source rows",
                y_label="MiB", lines={k: v for k, v in rss.items() if v})
    return result

