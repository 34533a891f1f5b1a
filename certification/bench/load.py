"""``certify bench load``: locust driving the receiver directly and through the fault proxy in the
same run, a sink delivery under that load in each phase, and the receiver's ledger checked
against what was acknowledged (issue 13).

Phases, each from an empty ledger: ``direct`` (locust -> receiver) and ``proxy`` (locust -> fault
proxy -> receiver, no fault armed), each with one delivery of the synthetic source by the sink
under test started while locust runs. Optionally ``distributed``: the same load from one locust
``--master`` and two ``--worker`` processes on this machine.

Ledger checks per phase (wrong results, non-zero exit): every key locust saw acknowledged has
exactly one effect (``lost``), no key has two (``doubled``), locust saw no failure, the sink's
delivery exited 0 with one effect per child and every row. Keys applied but not acknowledged are
requests in flight when locust stopped its users: counted, allowed up to one per user.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from certification.bench import workspace
from certification.bench.artifact import BenchResult
from certification.bench.deliveries import DeliveryBench, delivery_bench
from certification.services import proxy_process
from certification.sinks import SinkSpec

NAME = "load"
CHILD_BYTES = 8_000_000
LOCUSTFILE = Path(__file__).with_name("locustfile.py")
LOCUST = Path(sys.executable).with_name("locust")
WORKERS = 2
RPS_TOLERANCE = 0.6
"""Two short locust phases on a shared 2-core machine: their ratio moved from 0.3 to 1.3 here."""
KEY_PREFIX = "load"
"""Of every locust key (passed to the locustfile as ``BENCH_KEY_PREFIX``; never imported from it:
importing locust monkey-patches the importing process with gevent)."""


def _acknowledged(keys_dir: Path) -> tuple[list[str], int]:
    """Every key answered 2xx, and how many locust processes wrote keys."""
    files = sorted(keys_dir.glob("keys-*.txt"))
    return [key for path in files for key in path.read_text().split()], sum(1 for p in files if p.stat().st_size)


def _check_ledger(bench: DeliveryBench, keys_dir: Path, users: int) -> dict[str, Any]:
    acked, writers = _acknowledged(keys_dir)
    applied = Counter(str(e["idempotency_key"]) for e in bench.receiver.effects()
                      if str(e.get("idempotency_key") or "").startswith(KEY_PREFIX + "-"))
    acked_set = set(acked)
    return {"acknowledged": len(acked), "applied": sum(applied.values()), "writers": writers,
            "lost": len(acked_set - set(applied)), "doubled": sum(1 for n in applied.values() if n > 1),
            "acknowledged_twice": len(acked) - len(acked_set),
            "in_flight_at_stop": len(set(applied) - acked_set), "allowed_in_flight": users}


def _env(keys_dir: Path) -> dict[str, str]:
    return {**os.environ, "BENCH_KEYS_DIR": str(keys_dir), "BENCH_KEY_PREFIX": KEY_PREFIX}


def _local_locust(host: str, users: int, seconds: float, out: Path, keys_dir: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "certification.bench.locust_run", "--host", host, "--users",
                             str(users), "--seconds", str(seconds), "--out", str(out)], env=_env(keys_dir),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _phase(result: BenchResult, bench: DeliveryBench, spec: SinkSpec, *, name: str, host: str, via: str | None,
           users: int, seconds: float, work: Path) -> dict[str, Any]:
    bench.receiver.reset()
    keys, out = work / f"{name}-keys", work / f"{name}-locust.json"
    locust = _local_locust(host, users, seconds, out, keys)
    time.sleep(min(1.0, seconds / 4))  # the sink starts into load that is already running
    delivery = bench.sink(spec, via=via, reset=False)
    code = locust.wait(timeout=seconds + 120)
    figures: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    ledger = _check_ledger(bench, keys, users)
    _judge(result, name, code, figures=figures, ledger=ledger, users=users)
    result.check(f"{name}.sink", delivery.ok, f"exit {delivery.measured.exit_code}; {delivery.ledger_detail}")
    return {"locust": figures, "ledger": ledger, "sink": delivery.figures()}


def _judge(result: BenchResult, name: str, code: int, *, figures: dict[str, Any], ledger: dict[str, Any],
           users: int) -> None:
    result.check(f"{name}.locust", code == 0 and bool(figures.get("requests")) and figures.get("failures") == 0,
                 f"exit {code}, {figures.get('requests')} requests, {figures.get('failures')} failures")
    result.check(f"{name}.ledger", ledger["lost"] == 0 and ledger["doubled"] == 0 and ledger["acknowledged_twice"] == 0
                 and ledger["in_flight_at_stop"] <= users,  # one request in flight per user at most
                 f"lost {ledger['lost']}, doubled {ledger['doubled']}, in flight at stop "
                 f"{ledger['in_flight_at_stop']} of {ledger['acknowledged']} acknowledged")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _distributed(result: BenchResult, bench: DeliveryBench, *, users: int, seconds: float, work: Path
                 ) -> dict[str, Any]:
    """One ``locust --master`` and two ``--worker`` processes on 127.0.0.1, headless and bounded."""
    bench.receiver.reset()
    keys, port = work / "distributed-keys", _free_port()
    common = ["-f", str(LOCUSTFILE), "--loglevel", "ERROR"]
    master = subprocess.Popen(
        [str(LOCUST), *common, "--master", "--headless", "-u", str(users), "-r", str(users),
         "-t", f"{max(1, round(seconds))}s",
         "--expect-workers", str(WORKERS), "--expect-workers-max-wait", "60", "--master-bind-host", "127.0.0.1",
         "--master-bind-port", str(port), "--host", bench.receiver.data_url, "--csv", str(work / "distributed"),
         "--only-summary"], env=_env(keys), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
    workers = [subprocess.Popen([str(LOCUST), *common, "--worker", "--master-host", "127.0.0.1", "--master-port",
                                 str(port)], env=_env(keys), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=work) for _ in range(WORKERS)]
    try:
        code = master.wait(timeout=seconds + 120)
    finally:
        for process in (master, *workers):
            if process.poll() is None:
                process.kill()
            process.wait()
    figures = _master_stats(work / "distributed_stats.csv")
    ledger = _check_ledger(bench, keys, users)
    _judge(result, "distributed", code, figures=figures, ledger=ledger, users=users)
    result.check("distributed.workers", ledger["writers"] == WORKERS,
                 f"{ledger['writers']} worker processes wrote acknowledged keys (expected {WORKERS})")
    return {"locust": figures, "ledger": ledger, "workers": WORKERS}


def _master_stats(path: Path) -> dict[str, Any]:
    import csv  # noqa: PLC0415

    if not path.exists():
        return {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["Name"] == "Aggregated":
                return {"requests": int(row["Request Count"]), "failures": int(row["Failure Count"]),
                        "requests_per_s": round(float(row["Requests/s"]), 1), "p50_ms": float(row["50%"]),
                        "p95_ms": float(row["95%"]), "p99_ms": float(row["99%"])}
    return {}


def run(spec: SinkSpec, *, users: int, seconds: float, rows: int, work: Path, distributed: bool) -> BenchResult:
    result = BenchResult(NAME, {"sink": spec.name, "users": users, "seconds": seconds, "sink_rows": rows,
                                "distributed": distributed, "locust_workers": WORKERS if distributed else 0})
    phases: dict[str, Any] = {}
    size = workspace.size_for_rows(rows, CHILD_BYTES)
    with delivery_bench(work / "bench", size, child_bytes=CHILD_BYTES) as bench, \
            proxy_process(bench.receiver.data_url, work / "proxy", 0) as proxy:
        phases["direct"] = _phase(result, bench, spec, name="direct", host=bench.receiver.data_url, via=None,
                                  users=users, seconds=seconds, work=work)
        phases["proxy"] = _phase(result, bench, spec, name="proxy", host=proxy.url, via=proxy.url,
                                 users=users, seconds=seconds, work=work)
        if distributed:
            phases["distributed"] = _distributed(result, bench, users=users, seconds=seconds, work=work)
    result.figures = {"phases": phases}
    direct, proxied = phases["direct"]["locust"], phases["proxy"]["locust"]
    if direct.get("requests_per_s") and proxied.get("requests_per_s"):
        result.ratio("proxy_over_direct_requests_per_s", proxied["requests_per_s"] / direct["requests_per_s"],
                     tolerance=RPS_TOLERANCE, better="higher")
    result.plot("load_latency_ms", title="Request latency under load", x_label="percentile", y_label="ms",
                lines={name: [(50.0, float(p["locust"].get("p50_ms", 0))), (95.0, float(p["locust"].get("p95_ms", 0))),
                              (99.0, float(p["locust"].get("p99_ms", 0)))] for name, p in phases.items()})
    return result
