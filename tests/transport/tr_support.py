"""Support for the transport tests: body sources, timeout vectors, prepared batch requests, and
the real `mock-receiver serve` / `fault-proxy serve` processes on free ports."""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The mock receiver's test helpers start `mock-receiver serve` the same way for every suite.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mock_receiver"))

from mr_support import RECEIVERS, ServerProcess  # after the path insert

from fault_proxy.control_client import ControlClient
from sink.contracts.profile_policy import TimeoutVector
from sink.contracts.transport import PreparedRequest

__all__ = ["RECEIVERS", "ServerProcess"]

BATCHES = "/mock/v1/resources/measurements/batches"
RANGE_QUERY = "?range_start=2026-06-01&range_end=2026-06-05"


class BytesBody:
    """A sealed body held in memory (small test payloads); ``digest`` may be given wrong on purpose."""

    def __init__(self, data: bytes, *, digest: str | None = None, length: int | None = None,
                 chunk: int = 1024, delay_s: float = 0.0) -> None:
        self._data = data
        self._digest = digest or "sha256:" + hashlib.sha256(data).hexdigest()
        self._length = len(data) if length is None else length
        self._chunk = chunk
        self._delay_s = delay_s

    @property
    def length(self) -> int:
        return self._length

    @property
    def digest(self) -> str:
        return self._digest

    def chunks(self) -> Iterator[bytes]:
        for start in range(0, len(self._data), self._chunk):
            if self._delay_s:
                time.sleep(self._delay_s)
            yield self._data[start:start + self._chunk]


class GeneratedBody:
    """``length`` deterministic bytes produced chunk by chunk, never held whole."""

    def __init__(self, length: int, *, chunk: int = 1 << 20) -> None:
        self._length = length
        self._chunk = chunk
        digest = hashlib.sha256()
        for piece in self._pieces():
            digest.update(piece)
        self._digest = "sha256:" + digest.hexdigest()

    def _pieces(self) -> Iterator[bytes]:
        block = (b"restproof-transport-streaming-" * (self._chunk // 30 + 1))[: self._chunk]
        remaining = self._length
        while remaining > 0:
            piece = block[: min(remaining, self._chunk)]
            remaining -= len(piece)
            yield piece

    @property
    def length(self) -> int:
        return self._length

    @property
    def digest(self) -> str:
        return self._digest

    def chunks(self) -> Iterator[bytes]:
        return self._pieces()


def timeouts(**overrides: int) -> TimeoutVector:
    values = {"dns_ms": 2000, "connect_ms": 2000, "tls_ms": 2000, "write_ms": 5000, "read_ms": 5000,
              "idle_ms": 5000, "request_total_ms": 10000, "operation_total_ms": 60000}
    values.update(overrides)
    return TimeoutVector(**values)


def rows_json(tag: str, count: int = 3) -> bytes:
    rows = [{"business_date": f"2026-06-0{1 + index % 4}", "site": f"s{index}", "value": f"{tag}{index}"}
            for index in range(count)]
    return json.dumps(rows).encode()


def batch_request(key: str, body: Any, *, path: str = BATCHES + RANGE_QUERY,
                  extra_headers: tuple[tuple[str, str], ...] = ()) -> PreparedRequest:
    source = body if not isinstance(body, bytes) else BytesBody(body)
    return PreparedRequest(
        method="POST", path_and_query=path, semantic_headers=(("idempotency-key", key), *extra_headers),
        content_type="application/json", body=source,
        extract_pointers=("/receipt_id", "/accepted_rows", "/rejected_rows"),
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_receiver(state_dir: Path, behaviour: str = "json-batches") -> ServerProcess:
    return ServerProcess(RECEIVERS / f"{behaviour}.yaml", state_dir).start()


class FaultProxy:
    """`fault-proxy serve` in front of ``upstream`` (a real process; the control API drives it)."""

    def __init__(self, upstream: str) -> None:
        ready = Path(tempfile.mkdtemp(prefix="tr-fp-")) / "ready.json"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fault_proxy", "serve", "--listen", "127.0.0.1:0", "--upstream", upstream,
             "--control", "127.0.0.1:0", "--seed", "0", "--ready-file", str(ready)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while not ready.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError("fault-proxy did not start")
            time.sleep(0.05)
        info = json.loads(ready.read_text())
        self.url = f"http://{info['proxy']}"
        self.control = ControlClient(info["control"])

    def stderr_text(self) -> str:
        self.stop()
        return self.process.stderr.read().decode() if self.process.stderr else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.control.close()
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
