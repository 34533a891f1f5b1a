"""Test support for the fault proxy: a recording upstream, the proxy as a real process, and an
httpx client that records httpcore trace events (the client-side phase evidence)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from fault_proxy.control_client import ControlClient

TEST_ID = "x-test-id"


@dataclass
class SeenRequest:
    method: str
    path: str
    test_id: str | None
    body_bytes: int
    header_names: list[str]


@dataclass
class RecordingUpstream:
    """A tiny HTTP/1.1 receiver that records every complete request BEFORE answering it.

    Query parameters shape the answer: ``size`` (body bytes), ``status``, ``sleep`` (seconds).
    """

    server: ThreadingHTTPServer
    seen: list[SeenRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def record(self, item: SeenRequest) -> None:
        with self.lock:
            self.seen.append(item)

    def saw(self, test_id: str) -> list[SeenRequest]:
        with self.lock:
            return [s for s in self.seen if s.test_id == test_id]

    def wait_saw(self, test_id: str, timeout: float = 5.0) -> list[SeenRequest]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.saw(test_id)
            if found:
                return found
            time.sleep(0.02)
        return []


def _handler_for(upstream_ref: list[RecordingUpstream]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def _read_chunked(self) -> bytes:
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()

        def _handle(self) -> None:
            if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                body = self._read_chunked()
            else:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
            split = urlsplit(self.path)
            upstream_ref[0].record(
                SeenRequest(
                    self.command,
                    split.path,
                    self.headers.get(TEST_ID),
                    len(body),
                    [k.lower() for k in self.headers],
                )
            )
            query = parse_qs(split.query)
            time.sleep(float(query.get("sleep", ["0"])[0]))
            size = int(query.get("size", ["16"])[0])
            status = int(query.get("status", ["200"])[0])
            payload = (b"0123456789abcdef" * (size // 16 + 1))[:size]
            try:
                self.send_response(status)
                self.send_header("content-type", "application/octet-stream")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the proxy may have closed the connection on purpose

        do_GET = do_POST = do_PUT = do_DELETE = _handle

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


def start_upstream() -> RecordingUpstream:
    ref: list[RecordingUpstream] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(ref))
    server.daemon_threads = True
    upstream = RecordingUpstream(server)
    ref.append(upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return upstream


@dataclass
class RunningProxy:
    process: subprocess.Popen[bytes]
    proxy_url: str
    control_url: str
    upstream: RecordingUpstream
    control: ControlClient


def start_proxy(upstream: RecordingUpstream, seed: int = 0, stderr_path: Path | None = None,
                extra_args: tuple[str, ...] = (), control: str = "127.0.0.1:0") -> RunningProxy:
    """The proxy as a process; with ``stderr_path`` its stderr goes to that file (to be read after)."""
    ready = Path(tempfile.mkdtemp(prefix="fp-")) / "ready.json"
    stderr: Any = subprocess.PIPE if stderr_path is None else stderr_path.open("wb")
    process = subprocess.Popen(
        [
            sys.executable, "-m", "fault_proxy", "serve",
            "--listen", "127.0.0.1:0", "--upstream", upstream.url, "--control", control,
            "--seed", str(seed), "--ready-file", str(ready), *extra_args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            err = process.stderr.read().decode() if process.stderr else (stderr_path or Path()).read_text()
            raise RuntimeError(f"fault-proxy did not start: {err[-2000:]}")
        time.sleep(0.05)
    info = json.loads(ready.read_text())
    return RunningProxy(
        process, f"http://{info['proxy']}", f"http://{info['control']}", upstream, ControlClient(info["control"])
    )


def stop_proxy(proxy: RunningProxy) -> None:
    proxy.control.close()
    proxy.process.send_signal(signal.SIGTERM)
    try:
        proxy.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proxy.process.kill()
        proxy.process.wait()
    if proxy.process.stderr:
        proxy.process.stderr.close()


@pytest.fixture(scope="module")
def proxy() -> Iterator[RunningProxy]:
    upstream = start_upstream()
    running = start_proxy(upstream, seed=7)
    try:
        yield running
    finally:
        stop_proxy(running)
        upstream.server.shutdown()
        upstream.server.server_close()


@pytest.fixture
def fresh(proxy: RunningProxy) -> RunningProxy:
    """The module's proxy with no rules and an empty log."""
    proxy.control.reset(seed=7)
    return proxy


@dataclass
class Traced:
    """Outcome of one client request: httpcore trace steps, response or exception."""

    events: list[str] = field(default_factory=list)
    response: httpx.Response | None = None
    error: Exception | None = None
    body_bytes: int = 0

    def trace(self, name: str, info: dict[str, Any]) -> None:
        self.events.append(name)

    def saw(self, event: str) -> bool:
        return event in self.events

    @property
    def response_bytes_seen(self) -> bool:
        return self.saw("http11.receive_response_headers.complete")


def traced_request(
    base_url: str,
    method: str,
    path: str,
    test_id: str,
    *,
    content: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 5.0,
) -> Traced:
    """One request on a fresh connection, reading the body chunk by chunk to count what arrived."""
    out = Traced()
    all_headers = {TEST_ID: test_id, **(headers or {})}
    with httpx.Client(base_url=base_url, timeout=timeout) as client:
        try:
            with client.stream(
                method, path, content=content, headers=all_headers, extensions={"trace": out.trace}
            ) as response:
                out.response = response
                for chunk in response.iter_raw():
                    out.body_bytes += len(chunk)
        except httpx.HTTPError as exc:
            out.error = exc
    return out


def new_test_id() -> str:
    return f"t{os.getpid()}-{time.monotonic_ns()}"


def entry_for(proxy: RunningProxy, predicate: Any, timeout: float = 5.0) -> dict[str, Any]:
    """The single log entry satisfying ``predicate`` once it has reached a final state."""
    def final(entries: list[dict[str, Any]]) -> bool:
        hits = [e for e in entries if predicate(e)]
        return bool(hits) and all(
            e["phase"] == "delivered" or "error" in e["timestamps"] or "closed" in e["timestamps"] for e in hits
        )

    entries = proxy.control.wait_for_log(final, timeout=timeout)
    hits = [e for e in entries if predicate(e)]
    assert len(hits) == 1, hits
    return hits[0]
