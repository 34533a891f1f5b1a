"""Cost of the evidence-producing transport versus a plain httpx client, side by side.

Both clients post the same bodies to the same upstream (a raw keep-alive HTTP/1.1 drain server in
its own process that counts the body bytes and answers them in a small JSON document), in
alternating rounds so machine drift hits both alike:

- small requests (1 KiB body): requests/s and p50 latency;
- large bodies (default 16 MiB): MB/s, the transport streaming a ``BodySource`` with its digest
  checked, httpx sending the same bytes from memory.

    python benchmarks/bench_transport.py            # full run
    python benchmarks/bench_transport.py --quick    # CI-sized run

The run fails (exit 1) only on a wrong result: a non-200 answer, evidence other than
RESPONSE_RECEIVED, or a byte count at the peer that differs from the body. Figures are printed,
never judged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sink.contracts.profile_policy import TimeoutVector
from sink.contracts.transport import PreparedRequest, SendCertainty
from sink.transport import HttpxRestTransport, NoAuth

DRAIN = r"""
import socket, threading, json
def handle(conn):
    with conn:
        buffer = b""
        while True:
            while b"\r\n\r\n" not in buffer:
                data = conn.recv(1 << 20)
                if not data:
                    return
                buffer += data
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            seen = min(len(buffer), length)
            buffer = buffer[seen:]
            while seen < length:
                data = conn.recv(min(1 << 20, length - seen))
                if not data:
                    return
                seen += len(data)
            body = json.dumps({"received": seen}).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                         % (len(body), body))
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(64)
print(server.getsockname()[1], flush=True)
while True:
    conn, _ = server.accept()
    threading.Thread(target=handle, args=(conn,), daemon=True).start()
"""

TIMEOUTS = TimeoutVector(dns_ms=2000, connect_ms=2000, tls_ms=2000, write_ms=30000, read_ms=30000, idle_ms=30000,
                         request_total_ms=60000, operation_total_ms=60000)


class MemoryBody:
    def __init__(self, data: bytes, chunk: int = 1 << 20) -> None:
        self._data, self._chunk = data, chunk
        self.digest = "sha256:" + hashlib.sha256(data).hexdigest()

    @property
    def length(self) -> int:
        return len(self._data)

    def chunks(self) -> Iterator[bytes]:
        view = memoryview(self._data)
        for start in range(0, len(view), self._chunk):
            yield bytes(view[start:start + self._chunk])


class WrongResult(Exception):
    pass


def _check(status: int, received: object, expected: int) -> None:
    if status != 200 or received != expected:
        raise WrongResult(f"status {status}, peer received {received}, expected {expected}")


def transport_sender(transport: HttpxRestTransport, data: bytes) -> Callable[[], None]:
    # Sealing measured the digest once; sending re-verifies it while streaming (part of the cost).
    request = PreparedRequest(method="POST", path_and_query="/bench", semantic_headers=(),
                              content_type="application/octet-stream", body=MemoryBody(data),
                              extract_pointers=("/received",))

    def send() -> None:
        outcome = transport.send(request, timeouts=TIMEOUTS)
        if outcome.evidence.certainty is not SendCertainty.RESPONSE_RECEIVED or outcome.response is None:
            raise WrongResult(f"transport evidence {outcome.evidence.certainty} {outcome.evidence.failure}")
        _check(outcome.response.status, outcome.response.scalars.get("/received"), len(data))
    return send


def httpx_sender(client: httpx.Client, data: bytes) -> Callable[[], None]:
    def send() -> None:
        response = client.post("/bench", content=data, headers={"content-type": "application/octet-stream"})
        _check(response.status_code, response.json().get("received"), len(data))
    return send


def measure(send: Callable[[], None], count: int, cpu: list[float]) -> list[float]:
    """Wall-clock samples; the client's CPU time for the batch is appended to ``cpu`` (a figure
    that a loaded machine disturbs far less than wall time)."""
    samples = []
    cpu_started = time.process_time()
    for _ in range(count):
        started = time.perf_counter()
        send()
        samples.append(time.perf_counter() - started)
    cpu.append(time.process_time() - cpu_started)
    return samples


def run(url: str, *, rounds: int, small_count: int, large_count: int, large_mib: int) -> dict[str, float]:
    small, large = b"s" * 1024, b"L" * (large_mib << 20)
    timings: dict[str, list[float]] = {"t_small": [], "h_small": [], "t_large": [], "h_large": []}
    cpu: dict[str, list[float]] = {name: [] for name in timings}
    with HttpxRestTransport(url, NoAuth()) as transport, httpx.Client(base_url=url, timeout=60) as client:
        for _ in range(rounds):
            timings["t_small"] += measure(transport_sender(transport, small), small_count, cpu["t_small"])
            timings["h_small"] += measure(httpx_sender(client, small), small_count, cpu["h_small"])
            timings["t_large"] += measure(transport_sender(transport, large), large_count, cpu["t_large"])
            timings["h_large"] += measure(httpx_sender(client, large), large_count, cpu["h_large"])
    mib = large_mib * 1.048576
    return {
        "transport_small_cpu_us": 1e6 * sum(cpu["t_small"]) / len(timings["t_small"]),
        "httpx_small_cpu_us": 1e6 * sum(cpu["h_small"]) / len(timings["h_small"]),
        "transport_large_cpu_ms_per_mib": 1e3 * sum(cpu["t_large"]) / (len(timings["t_large"]) * large_mib),
        "httpx_large_cpu_ms_per_mib": 1e3 * sum(cpu["h_large"]) / (len(timings["h_large"]) * large_mib),
        "transport_small_rps": len(timings["t_small"]) / sum(timings["t_small"]),
        "httpx_small_rps": len(timings["h_small"]) / sum(timings["h_small"]),
        "transport_small_p50_ms": statistics.median(timings["t_small"]) * 1000,
        "httpx_small_p50_ms": statistics.median(timings["h_small"]) * 1000,
        "transport_large_mb_s": mib * len(timings["t_large"]) / sum(timings["t_large"]),
        "httpx_large_mb_s": mib * len(timings["h_large"]) / sum(timings["h_large"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (figures indicative only)")
    parser.add_argument("--large-mib", type=int, default=16)
    args = parser.parse_args()
    rounds, small_count, large_count = (2, 50, 2) if args.quick else (5, 400, 6)
    drain = subprocess.Popen([sys.executable, "-c", DRAIN], stdout=subprocess.PIPE, text=True)
    try:
        assert drain.stdout is not None
        url = f"http://127.0.0.1:{drain.stdout.readline().strip()}"
        figures = run(url, rounds=rounds, small_count=small_count, large_count=large_count,
                      large_mib=args.large_mib)
    except WrongResult as wrong:
        print(f"bench_transport: WRONG RESULT: {wrong}", file=sys.stderr)
        return 1
    finally:
        drain.kill()
        drain.wait()
    figures["small_rps_ratio"] = figures["transport_small_rps"] / figures["httpx_small_rps"]
    figures["large_mb_s_ratio"] = figures["transport_large_mb_s"] / figures["httpx_large_mb_s"]
    figures["small_cpu_ratio"] = figures["transport_small_cpu_us"] / figures["httpx_small_cpu_us"]
    figures["large_cpu_ratio"] = figures["transport_large_cpu_ms_per_mib"] / figures["httpx_large_cpu_ms_per_mib"]
    print(json.dumps({name: round(value, 3) for name, value in figures.items()}, indent=2))
    print(f"transport/httpx: small requests/s x{figures['small_rps_ratio']:.2f}, "
          f"large-body MB/s x{figures['large_mb_s_ratio']:.2f}; client CPU per request "
          f"x{figures['small_cpu_ratio']:.2f} (small), per MiB x{figures['large_cpu_ratio']:.2f} (large) "
          f"({'quick run, indicative' if args.quick else 'full run'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
