"""Added latency and throughput of the fault proxy versus a direct connection, side by side.

Starts one upstream (a threaded HTTP/1.1 server in its own process) and one ``fault-proxy serve``
process in front of it, then measures the same client workload against both in alternating
rounds, so drift on the machine hits both sides alike. Request counts are bounded.

    python benchmarks/bench_fault_proxy.py            # full run
    python benchmarks/bench_fault_proxy.py --quick    # CI-sized run
    python benchmarks/bench_fault_proxy.py --rules 20 # with 20 installed non-matching rules

Target: at most 2 ms added p50 latency on loopback (``--enforce`` exits 1 when missed). Quick-mode
figures rest on few samples and are indicative; judge the target on a full run of an idle machine.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from fault_proxy.control_client import ControlClient

UPSTREAM = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
BODY = b"r" * int(sys.argv[1])
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/octet-stream")
        self.send_header("content-length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""

TARGET_ADDED_P50_MS = 2.0


@dataclass
class Latency:
    samples_ms: list[float]

    def pct(self, q: float) -> float:
        ordered = sorted(self.samples_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def p50(self) -> float:
        return statistics.median(self.samples_ms)


def _start_upstream(response_bytes: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", UPSTREAM, str(response_bytes)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


def _start_proxy(upstream: str) -> tuple[subprocess.Popen[bytes], str, str]:
    ready = Path(tempfile.mkdtemp(prefix="bench-fp-")) / "ready.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fault_proxy", "serve", "--listen", "127.0.0.1:0", "--upstream", upstream,
         "--control", "127.0.0.1:0", "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("fault-proxy did not start")
        time.sleep(0.05)
    info = json.loads(ready.read_text())
    return proc, f"http://{info['proxy']}", info["control"]


def _latency_block(client: httpx.Client, url: str, body: bytes, count: int, out: list[float]) -> None:
    for _ in range(count):
        started = time.perf_counter()
        response = client.post(url, content=body)
        out.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"unexpected status {response.status_code} from {url}")


def measure_throughput(url: str, body: bytes, threads: int, per_thread: int) -> float:
    """Requests per second with ``threads`` keep-alive clients each sending ``per_thread`` requests."""
    barrier = threading.Barrier(threads + 1)
    errors: list[str] = []

    def worker() -> None:
        with httpx.Client(timeout=10) as client:
            client.post(url, content=body)  # open the connection before the clock starts
            barrier.wait()
            for _ in range(per_thread):
                if client.post(url, content=body).status_code != 200:
                    errors.append("status")

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in pool:
        thread.join(120)
    elapsed = time.perf_counter() - started
    if errors:
        raise SystemExit(f"{len(errors)} failed requests during the throughput run")
    return threads * per_thread / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small bounded run for CI")
    parser.add_argument("--rules", type=int, default=0, help="install this many non-matching rules first")
    parser.add_argument("--body-bytes", type=int, default=1024, help="request and response body size")
    parser.add_argument("--json", dest="json_path", help="also write the figures to this JSON file")
    parser.add_argument("--enforce", action="store_true", help="exit 1 if the added p50 exceeds the target")
    args = parser.parse_args(argv)

    rounds, per_round = (4, 50) if args.quick else (10, 200)
    threads, per_thread = (4, 50) if args.quick else (8, 250)
    warmup = 100 if args.quick else 200  # the proxy process is cold: warm both paths first
    body = b"q" * args.body_bytes

    upstream_proc, upstream = _start_upstream(args.body_bytes)
    proxy_proc, proxy, control = _start_proxy(upstream)
    try:
        with ControlClient(control) as ctl:
            for i in range(args.rules):
                ctl.add_rule({"match": {"path": f"/never/{i}/*"}, "fault": {"action": "close", "phase": "request"}})
        targets = {"direct": f"{upstream}/bench", "proxy": f"{proxy}/bench"}
        latency: dict[str, list[float]] = {name: [] for name in targets}
        with httpx.Client(timeout=10) as client:
            for url in targets.values():
                _latency_block(client, url, body, warmup, [])
            for _ in range(rounds):  # alternate so machine drift hits both sides alike
                for name, url in targets.items():
                    _latency_block(client, url, body, per_round, latency[name])
        throughput = {name: measure_throughput(url, body, threads, per_thread) for name, url in targets.items()}
    finally:
        for proc in (proxy_proc, upstream_proc):
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()

    direct, proxied = Latency(latency["direct"]), Latency(latency["proxy"])
    added_p50 = proxied.p50 - direct.p50
    added_p99 = proxied.pct(0.99) - direct.pct(0.99)
    figures = {
        "mode": "quick" if args.quick else "full",
        "rules_installed": args.rules,
        "body_bytes": args.body_bytes,
        "latency_requests_per_side": len(direct.samples_ms),
        "direct_p50_ms": round(direct.p50, 3),
        "direct_p99_ms": round(direct.pct(0.99), 3),
        "proxy_p50_ms": round(proxied.p50, 3),
        "proxy_p99_ms": round(proxied.pct(0.99), 3),
        "added_p50_ms": round(added_p50, 3),
        "added_p99_ms": round(added_p99, 3),
        "p50_ratio": round(proxied.p50 / direct.p50, 2),
        "throughput_clients": threads,
        "throughput_requests_per_side": threads * per_thread,
        "direct_rps": round(throughput["direct"], 1),
        "proxy_rps": round(throughput["proxy"], 1),
        "rps_ratio": round(throughput["proxy"] / throughput["direct"], 3),
        "target_added_p50_ms": TARGET_ADDED_P50_MS,
        "target_met": added_p50 <= TARGET_ADDED_P50_MS,
    }
    print(f"fault-proxy benchmark ({figures['mode']}, {args.rules} rules, {args.body_bytes} B bodies)")
    print(f"{'':12}{'p50 ms':>10}{'p99 ms':>10}{'req/s':>12}")
    print(f"{'direct':12}{direct.p50:>10.3f}{direct.pct(0.99):>10.3f}{throughput['direct']:>12.1f}")
    print(f"{'proxy':12}{proxied.p50:>10.3f}{proxied.pct(0.99):>10.3f}{throughput['proxy']:>12.1f}")
    print(f"added p50 {added_p50:.3f} ms (target <= {TARGET_ADDED_P50_MS} ms: "
          f"{'met' if figures['target_met'] else 'MISSED'}), added p99 {added_p99:.3f} ms, "
          f"p50 ratio {figures['p50_ratio']}x, throughput ratio {figures['rps_ratio']}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(figures, indent=2) + "\n")
    return 1 if args.enforce and not figures["target_met"] else 0


if __name__ == "__main__":
    sys.exit(main())
