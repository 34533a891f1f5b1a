"""Sealing throughput against plain gzip, and peak memory against a naive sealer, side by side.

    python benchmarks/bench_sealing.py            # 256 MB rate run; 0.25 GB and 1 GB memory runs
    python benchmarks/bench_sealing.py --quick    # CI-sized: 16 MB rate run, 16/64 MB memory runs

Rate: the same decoded CSV bytes (realistic rows encoded by the bundled mock.dataset-jobs@1
codec, a 4 MiB block of distinct rows repeated, so deflate's 32 KiB window sees no repeats) are
(a) gzip-compressed in 1 MiB chunks with zlib at the profile's level and thrown away, and
(b) sealed by ``StreamingSealer`` — per-day verified ranged reads, framing, gzip, multipart
boundary scan, SHA-256 of decoded and wire bytes, write + fsync + link of the artifact. Both
rates are decoded MB/s; the ratio is (b)/(a), alternated over rounds so machine drift hits both.

The CSV writer is NOT in the sealing loop: rows are encoded once, while the source is frozen,
and the parent stores them in payload format, so sealing (and every refinement re-seal) is byte
ranges + compression. The freeze is measured in the same run, over a real CSV file of synthetic
rows: ``freeze()`` end to end (read, check, normalize, encode, spill, sort per day, publish),
in source MB/s, beside plain gzip of the same run (``freeze_over_gzip``).

Memory: for each decoded size, a fresh process seals every 64 MB child (16 MB in --quick) of a
prepared parent and reports its own peak RSS (ru_maxrss and VmHWM); a naive sealer process that
reads the whole parent into memory and gzips each child from it runs beside it. Memory runs use
gzip level 1 (memory does not depend on the level; time does).

Targets (printed, never enforced): ratio >= 0.8; streaming peak RSS <= 150 MB and the 1 GB run
within 10% of the 0.25 GB run. --quick fails (exit 1) only on wrong results: sealed bytes that do
not decompress to the parent's bytes, or a wire length that differs from the bytes streamed.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import zlib
from datetime import date, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sink.artifacts import LocalArtifactStore, put_document  # noqa: E402
from sink.compiler import compile_files, default_paths  # noqa: E402
from sink.contracts.plan import CompiledPlan  # noqa: E402
from sink.contracts.source import SyntheticSource  # noqa: E402
from sink.payload.body import WireBody  # noqa: E402
from sink.payload.encoding import RowEncoder, payload_encoding  # noqa: E402
from sink.payload.rendering import RequestSymbols, render_request  # noqa: E402
from sink.payload.sealer import ChildSpec, StreamingSealer  # noqa: E402
from sink.source.freeze import PARENT_SCHEMA_ID, load_parent  # noqa: E402
from sink.source.normalize import RowNormalizer  # noqa: E402
from sink.source.synthetic import day_records  # noqa: E402

MB = 1_000_000
BLOCK_BYTES = 4 * 1024 * 1024
CHUNK = 1 << 20
DAY0 = date(2026, 1, 1)


def _plan() -> CompiledPlan:
    return compile_files(default_paths(REPO / "scenarios" / "workloads" / "measurements-async.yaml"))


def _encoded_block(plan: CompiledPlan) -> tuple[bytes, int, float]:
    """~4 MiB of distinct encoded rows and the freeze-side normalize+encode rate (MB/s)."""
    assert plan.mapping is not None
    normalizer = RowNormalizer(plan.mapping)
    encoder = RowEncoder(plan.mapping, payload_encoding(plan.operation))
    spec = SyntheticSource(type="synthetic", seed=1, min_rows_per_day=20_000, max_rows_per_day=20_000)
    out = bytearray()
    rows = 0
    started = time.perf_counter()
    day = DAY0
    while len(out) < BLOCK_BYTES:
        for record in day_records(spec, day):
            out += encoder.encode(normalizer.normalize(record, rows))
            rows += 1
            if len(out) >= BLOCK_BYTES:
                break
        day += timedelta(days=1)
    elapsed = time.perf_counter() - started
    # One business date per block in the benchmark parent: rewrite every row's date to DAY0.
    return bytes(out), rows, len(out) / MB / elapsed


def freeze_rate(scratch: Path, source_bytes: int) -> tuple[float, int, str]:
    """Freeze a CSV file of ~``source_bytes`` synthetic rows: (source MB/s, rows, rows digest)."""
    import csv  # noqa: PLC0415

    from sink.contracts.source import CsvFileSource  # noqa: PLC0415
    from sink.source.files import FileSourcePort  # noqa: PLC0415
    from sink.source.freeze import freeze  # noqa: PLC0415
    from sink.source.synthetic import COLUMNS  # noqa: PLC0415

    plan = _plan()
    assert plan.mapping is not None
    spec = SyntheticSource(type="synthetic", seed=3, min_rows_per_day=20_000, max_rows_per_day=20_000)
    path = scratch / "freeze-source.csv"
    day = DAY0
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(COLUMNS)
        while out.tell() < source_bytes:
            for record in day_records(spec, day):
                writer.writerow(["" if record[c] is None else record[c] for c in COLUMNS])
            day += timedelta(days=1)
    started = time.perf_counter()
    parent = freeze(snapshot_port=FileSourcePort(CsvFileSource(type="csv_file", path=path.name), scratch),
                    normalizer=RowNormalizer(plan.mapping), encoder=RowEncoder(plan.mapping,
                                                                               payload_encoding(plan.operation)),
                    scope_from=DAY0, scope_to=day, store=LocalArtifactStore(scratch / "freeze-store"),
                    max_day_bytes=plan.operation.limits.max_decoded_bytes,
                    compiled_plan_digest=plan.compiled_plan_digest)
    elapsed = time.perf_counter() - started
    return path.stat().st_size / MB / elapsed, parent.row_count, parent.rows_ref


def build_parent(root: Path, decoded: int, level: int) -> dict[str, Any]:
    plan = _plan()
    if level != 6:
        document = plan.model_dump(mode="json")
        document["operation"]["request"]["body"]["payload_part"]["gzip_level"] = level
        plan = CompiledPlan.model_validate(document)
    block, block_rows, encode_rate = _encoded_block(plan)
    days = max(1, decoded // len(block))
    store = LocalArtifactStore(root)
    rows_ref = store.put(block for _ in range(days))
    digest = "sha256:" + hashlib.sha256(block).hexdigest()
    encoder = RowEncoder(plan.mapping, payload_encoding(plan.operation))  # type: ignore[arg-type]
    parent = put_document(store, {
        "schema_id": PARENT_SCHEMA_ID, "refs": [rows_ref.digest], "rows_ref": rows_ref.digest,
        "row_count": days * block_rows, "rows_bytes": rows_ref.length,
        "logical_scope": {"bounds": "[)", "from": DAY0.isoformat(),
                          "to": (DAY0 + timedelta(days=days)).isoformat()},
        "source": {"kind": "benchmark", "version": "bench"}, "fixed_overhead_bytes": len(encoder.prefix()),
        "days": [{"day": (DAY0 + timedelta(days=i)).isoformat(), "rows": block_rows, "decoded_bytes": len(block),
                  "row_start": i * block_rows, "byte_start": i * len(block), "digest": digest} for i in range(days)],
    })
    return {"root": str(root), "parent": parent.digest, "level": level, "encode_rate": encode_rate,
            "plan": plan.model_dump(mode="json")}


def _children(info: dict[str, Any], child_bytes: int) -> tuple[Any, list[ChildSpec], CompiledPlan]:
    store = LocalArtifactStore(info["root"])
    parent = load_parent(store, info["parent"])
    plan = CompiledPlan.model_validate(info["plan"])
    per_child = max(1, child_bytes // parent.days[0].decoded_bytes)
    specs = []
    for ordinal, start in enumerate(range(0, len(parent.days), per_child)):
        days = parent.days[start:start + per_child]
        scope_from, scope_to = days[0].day, days[-1].day + timedelta(days=1)
        key = "sha256:" + hashlib.sha256(f"child-{ordinal}".encode()).hexdigest()
        rendered = render_request(plan, RequestSymbols("measurements", key, key, scope_from, scope_to))
        specs.append(ChildSpec(ordinal, scope_from, scope_to, days[0].row_start, days[-1].row_start + days[-1].rows,
                               key, key, rendered))
    return store, specs, plan


def _peak_rss() -> dict[str, int]:
    with open("/proc/self/status", encoding="ascii") as status:
        hwm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
    return {"ru_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "vm_hwm": hwm}


def seal_children(info: dict[str, Any], child_bytes: int) -> dict[str, Any]:
    store, specs, plan = _children(info, child_bytes)
    parent = load_parent(store, info["parent"])
    encoder = RowEncoder(plan.mapping, payload_encoding(plan.operation))  # type: ignore[arg-type]
    sealer = StreamingSealer(store, parent, encoder)
    started = time.perf_counter()
    sealed = [sealer.seal(spec) for spec in specs]
    elapsed = time.perf_counter() - started
    return {"children": len(sealed), "seconds": elapsed, "decoded": sum(s.decoded_bytes for s in sealed),
            "manifests": [s.manifest_ref for s in sealed], **_peak_rss()}


def naive_children(info: dict[str, Any], child_bytes: int) -> dict[str, Any]:
    """Read the whole parent, then build and compress each child body in memory."""
    store, specs, plan = _children(info, child_bytes)
    parent = load_parent(store, info["parent"])
    everything = b"".join(store.open(parent.rows_ref).chunks())
    encoder = RowEncoder(plan.mapping, payload_encoding(plan.operation))  # type: ignore[arg-type]
    started = time.perf_counter()
    for spec in specs:
        days = parent.day_range(spec.scope_from, spec.scope_to)
        body = encoder.prefix() + everything[days[0].byte_start: days[-1].byte_start + days[-1].decoded_bytes]
        store.put_bytes(gzip.compress(body, info["level"], mtime=0))
    return {"children": len(specs), "seconds": time.perf_counter() - started, **_peak_rss()}


def _subprocess(mode: str, info_path: Path, child_bytes: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--child", mode, str(info_path), str(child_bytes)],
                          capture_output=True, text=True, timeout=3600, check=True)
    return dict(json.loads(done.stdout))


def _plain_gzip_rate(store: LocalArtifactStore, rows_ref: str, prefix: bytes, level: int) -> float:
    started = time.perf_counter()
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)  # gzip framing: deflate + CRC-32
    size = len(prefix)
    compressor.compress(prefix)
    with store.open(rows_ref).path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            compressor.compress(chunk)
            size += len(chunk)
    compressor.flush()
    return size / MB / (time.perf_counter() - started)


def _has_zlib_ng() -> bool:
    try:
        import zlib_ng  # noqa: F401, PLC0415 - optional
    except ImportError:
        return False
    return True


def _check_round_trip(store: LocalArtifactStore, manifest_ref: str, expected: bytes) -> bool:
    body = WireBody.load(store, manifest_ref)
    streamed = b"".join(body.chunks())
    payload = b"".join(store.open(json.loads(b"".join(store.open(manifest_ref).chunks()))["payload"]["digest"])
                       .chunks())
    return len(streamed) == body.length and gzip.decompress(payload) == expected


def rate_run(scratch: Path, decoded: int, rounds: int) -> tuple[list[str], bool]:
    lines: list[str] = []
    ok = True
    for level in (1, 6):
        info = build_parent(scratch / f"rate-{level}", decoded, level)
        store, specs, plan = _children(info, decoded)  # one child over everything
        parent = load_parent(store, info["parent"])
        encoder = RowEncoder(plan.mapping, payload_encoding(plan.operation))  # type: ignore[arg-type]
        sealers = {"zlib": StreamingSealer(store, parent, encoder)}
        if _has_zlib_ng():
            sealers["zlib-ng"] = StreamingSealer(store, parent, encoder, implementation="zlib-ng")
        gzip_rates: list[float] = []
        seal_rates: dict[str, list[float]] = {name: [] for name in sealers}
        for round_ in range(rounds):
            gzip_rates.append(_plain_gzip_rate(store, parent.rows_ref, encoder.prefix(), level))
            spec = specs[0]
            # A distinct key per round: every seal writes a new artifact, as in production.
            key = "sha256:" + hashlib.sha256(f"round-{round_}".encode()).hexdigest()
            rendered = render_request(plan, RequestSymbols("measurements", key, key, spec.scope_from, spec.scope_to))
            spec = ChildSpec(0, spec.scope_from, spec.scope_to, spec.row_start, spec.row_end, key, key, rendered)
            for name, sealer in sealers.items():
                started = time.perf_counter()
                sealed = sealer.seal(spec)
                seal_rates[name].append(sealed.decoded_bytes / MB / (time.perf_counter() - started))
                if level == 1 and decoded <= 64 * MB and round_ == 0:
                    expected = encoder.prefix() + b"".join(store.open(parent.rows_ref).chunks())
                    ok = ok and _check_round_trip(store, sealed.manifest_ref, expected)
        best_gzip = max(gzip_rates)
        for name, rates in seal_rates.items():
            lines.append(f"level {level}: plain gzip (zlib) {best_gzip:7.1f} MB/s  "
                         f"sealer[{name}] {max(rates):7.1f} MB/s  ratio {max(rates) / best_gzip:.2f} "
                         f"(target >= 0.80; best of {rounds})")
        if level == 6:
            freeze_mb_s, rows, _ = freeze_rate(scratch, max(decoded // 8, 2 * MB))
            lines.append(f"freeze of a CSV file ({rows} rows; read, normalize, encode, spill, sort, publish): "
                         f"{freeze_mb_s:.2f} source MB/s  freeze_over_gzip {freeze_mb_s / best_gzip:.3f} "
                         f"(target >= 25 MB/s)")
            lines.append(f"normalize+encode of synthetic records, generator included: {info['encode_rate']:.1f} MB/s")
    return lines, ok


def memory_run(scratch: Path, sizes: list[int], child_bytes: int) -> list[str]:
    lines = []
    streaming: dict[int, int] = {}
    for size in sizes:
        info = build_parent(scratch / f"mem-{size}", size, 1)
        info_path = scratch / f"mem-{size}.json"
        info_path.write_text(json.dumps(info), encoding="utf-8")
        sealed = _subprocess("seal", info_path, child_bytes)
        naive = _subprocess("naive", info_path, child_bytes)
        streaming[size] = sealed["vm_hwm"]
        lines.append(f"{size / 1e9:5.2f} GB decoded, {sealed['children']} children of {child_bytes / MB:.0f} MB: "
                     f"streaming peak RSS {sealed['vm_hwm'] / MB:6.1f} MB (ru_maxrss {sealed['ru_maxrss'] / MB:.1f}) "
                     f"| naive {naive['vm_hwm'] / MB:7.1f} MB  (target <= 150 MB)")
    if len(sizes) == 2:
        small, large = (streaming[s] for s in sizes)
        lines.append(f"large/small streaming peak: {large / small:.3f} (target within 1.10)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, info_path, child_bytes = args.child
        info = json.loads(Path(info_path).read_text(encoding="utf-8"))
        run = seal_children if mode == "seal" else naive_children
        print(json.dumps(run(info, int(child_bytes))))
        return 0
    with tempfile.TemporaryDirectory(prefix="restproof-bench-sealing-") as scratch_dir:
        scratch = Path(scratch_dir)
        if args.quick:
            rate_lines, ok = rate_run(scratch, 16 * MB, 2)
            memory_lines = memory_run(scratch, [16 * MB, 64 * MB], 16 * MB)
        else:
            rate_lines, ok = rate_run(scratch, 256 * MB, 3)
            memory_lines = memory_run(scratch, [250 * MB, 1000 * MB], 64 * MB)
    print("bench_sealing: CSV+gzip sealing vs plain gzip of the same bytes (decoded MB/s)")
    for line in rate_lines + memory_lines:
        print("  " + line)
    if not ok:
        print("bench_sealing: WRONG RESULT: sealed bytes do not round-trip", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
