"""``certify bench rss``: peak RSS of the sink delivering synthetic sources of two sizes, beside a
naive "read everything, post it" sink in the same run (issue 13).

Peak RSS is the delivering process's own ``ru_maxrss`` from ``wait4`` (the kernel's VmHWM of that
process). The sources are padded synthetic rows (about 4 KiB decoded each), so large decoded
volumes are cheap to generate; children are at most 64 MB decoded. A streaming sink's peak should
not grow with the source (``sink_large_over_small`` near 1); the naive sink's grows with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from certification.bench import workspace
from certification.bench.artifact import BenchResult
from certification.bench.deliveries import delivery_bench
from certification.sinks import SinkSpec

NAME = "rss"
CHILD_BYTES = 64_000_000
TOLERANCE = 0.25
"""Peak RSS is far steadier than time: a quarter is well outside allocator noise."""


def run(spec: SinkSpec, *, decoded_bytes: Sequence[int], work: Path) -> BenchResult:
    if len(decoded_bytes) < 2:
        raise ValueError("the RSS bench needs two source sizes")
    result = BenchResult(NAME, {"sink": spec.name, "decoded_bytes": list(decoded_bytes), "child_bytes": CHILD_BYTES,
                                "baseline": "naive read-all",
                                "receiver": "mock-receiver bench-batches, storage: ledger_only"})
    peaks: dict[str, list[tuple[float, float]]] = {spec.name: [], "naive-read-all": []}
    by_size: dict[str, dict[str, object]] = {}
    for target in decoded_bytes:
        size = workspace.size_for_bytes(target, CHILD_BYTES)
        with delivery_bench(work / f"bytes{target}", size, child_bytes=CHILD_BYTES, ledger_only=True) as bench:
            sink, naive = bench.sink(spec), bench.naive("read-all")
            result.parameters["bytecode"] = bench.bytecode
            decoded_mb = round(target / 1e6, 1)
            for label, delivery in ((spec.name, sink), ("naive-read-all", naive)):
                result.check(f"{target}.{label}", delivery.ok,
                             f"exit {delivery.measured.exit_code}; {delivery.ledger_detail}")
                peaks[label].append((decoded_mb, round(delivery.measured.peak_rss_mib, 1)))
            by_size[str(target)] = {"rows": bench.rows, "children": len(bench.bundle["children"]),
                                    "wire_mb": round(bench.wire_bytes / 1e6, 1),
                                    "sink": sink.figures(), "naive_read_all": naive.figures()}
    small, large = peaks[spec.name][0][1], peaks[spec.name][-1][1]
    naive_large = peaks["naive-read-all"][-1][1]
    result.figures = {"by_decoded_bytes": by_size, "targets": {"sink_peak_rss_mib": "<= 150 (64 MB children)"}}
    result.ratio("sink_large_over_small", large / small, tolerance=TOLERANCE, better="lower")
    result.ratio("sink_over_naive_large", large / naive_large, tolerance=TOLERANCE, better="lower")
    result.plot("rss_peak_mib", title="Peak RSS over source size", x_label="decoded source MB",
                y_label="peak RSS MiB", lines=peaks)
    return result
