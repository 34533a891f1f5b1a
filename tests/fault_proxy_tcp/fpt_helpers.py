"""Helpers for the fault_proxy.tcp tests: upstream servers and raw-socket clients."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fault_proxy.tcp.launcher import ToxiproxyHandle, ToxiproxyNotFound, find_real_toxiproxy, start_toxiproxy
from fault_proxy.tcp.server import READY_PREFIX

NO_REAL_SERVER = "no Toxiproxy server binary on PATH or in TOXIPROXY_SERVER"
HTTP_BODY = b"0123456789abcdef" * 256  # 4096 bytes, a fixed test body with no meaning


def start_server(kind: str, seed: int | None = None) -> ToxiproxyHandle:
    if kind == "real":
        try:
            if find_real_toxiproxy() is None:
                pytest.skip(NO_REAL_SERVER)
        except ToxiproxyNotFound as exc:
            pytest.fail(str(exc))  # TOXIPROXY_SERVER was set: a broken setting must not pass as a skip
    return start_toxiproxy(kind, seed=seed)  # type: ignore[arg-type]


class EchoServer:
    """Echoes every byte back (echo=True) or only counts them; records bytes received per connection."""

    def __init__(self, *, echo: bool = True) -> None:
        self.echo = echo
        self.received: list[int] = []  # one entry per finished connection
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.address = f"127.0.0.1:{self._sock.getsockname()[1]}"
        self._closed = False
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        total = 0
        try:
            while data := conn.recv(65536):
                total += len(data)
                if self.echo:
                    conn.sendall(data)
        except OSError:
            pass
        finally:
            conn.close()
            self.received.append(total)

    def wait_connections(self, count: int, timeout: float = 3.0) -> list[int]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return list(self.received)

    def close(self) -> None:
        self._closed = True
        self._sock.close()


class _BodyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(HTTP_BODY)))
        self.end_headers()
        self.wfile.write(HTTP_BODY)

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass


class _QuietHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # resets are the point of these tests; socketserver would print each one


def start_http_server() -> tuple[ThreadingHTTPServer, str]:
    """An HTTP/1.1 server answering every GET with HTTP_BODY, and its host:port."""
    server = _QuietHTTPServer(("127.0.0.1", 0), _BodyHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"127.0.0.1:{server.server_address[1]}"


def listen_address(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    return host or "127.0.0.1", int(port)


def connect(listen: str, timeout: float = 5.0) -> socket.socket:
    return socket.create_connection(listen_address(listen), timeout=timeout)


def read_until_closed(sock: socket.socket, limit: int = 1 << 20) -> tuple[bytes, int]:
    """Everything the peer sends until it closes (FIN), and the number of recv calls that had data."""
    chunks: list[bytes] = []
    while sum(map(len, chunks)) < limit:
        data = sock.recv(65536)
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks), len(chunks)


def echo_roundtrip(listen: str, payload: bytes) -> tuple[bytes, float]:
    """Send `payload` through the proxy to the echo server; return what came back and the time."""
    with connect(listen) as sock:
        started = time.monotonic()
        sock.sendall(payload)
        received = b""
        while len(received) < len(payload):
            data = sock.recv(65536)
            if not data:
                break
            received += data
        return received, time.monotonic() - started


class Served:
    """The built-in server as a process (`python -m fault_proxy.tcp serve`), its stderr kept in a file."""

    def __init__(self, *extra_args: str) -> None:
        self.stderr_path = Path(tempfile.mkdtemp(prefix="fpt-served-")) / "stderr.log"
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen([sys.executable, "-m", "fault_proxy.tcp", "serve", "--api", "127.0.0.1:0",
                                         *extra_args],
                                        stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith(READY_PREFIX), line
        self.url = line[len(READY_PREFIX):].strip()
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        self.host, self.port = host, int(port)

    def stop(self) -> str:
        self.process.terminate()
        self.process.wait(20)
        self._stderr.close()
        return self.stderr_path.read_text(errors="replace")
