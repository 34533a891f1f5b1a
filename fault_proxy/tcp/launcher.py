"""Start a Toxiproxy-compatible server: the real Go binary when installed, else the built-in one.

    handle = start_toxiproxy()            # real if found, else built-in (subprocess)
    handle.api_url                        # e.g. http://127.0.0.1:40123
    handle.stop()

The real server is looked up from `TOXIPROXY_SERVER` (path or name of the binary), then
`toxiproxy-server` on PATH. A `TOXIPROXY_SERVER` that names no executable is an error, never a
silent fall back: whoever set it expects that binary to be the one tested.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

import httpx

from fault_proxy.tcp.addresses import join_host_port
from fault_proxy.tcp.server import READY_PREFIX, BuiltinServerThread

ENV_SERVER = "TOXIPROXY_SERVER"
REAL_BINARY = "toxiproxy-server"
LOOPBACK = "127.0.0.1"

Kind = Literal["auto", "real", "builtin"]


class ToxiproxyNotFound(RuntimeError):
    """No real Toxiproxy server binary (or TOXIPROXY_SERVER names a missing one)."""


class LaunchError(RuntimeError):
    """A server was found but did not come up."""


@dataclass
class ToxiproxyHandle:
    """A running server: where its API is, what it is, and how to stop it."""

    kind: Literal["real", "builtin"]
    host: str
    port: int
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _thread: BuiltinServerThread | None = field(default=None, repr=False)

    @property
    def api_url(self) -> str:
        return f"http://{join_host_port(self.host, self.port)}"

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread is not None:
            self._thread.stop(timeout)
            self._thread = None
        if self._process is not None:
            _terminate(self._process, timeout)
            self._process = None

    def __enter__(self) -> ToxiproxyHandle:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def find_real_toxiproxy() -> str | None:
    """Path of a real toxiproxy-server, or None. Raises if TOXIPROXY_SERVER names nothing runnable."""
    named = os.environ.get(ENV_SERVER)
    if named:
        found = shutil.which(named)
        if found is None:
            raise ToxiproxyNotFound(f"{ENV_SERVER}={named!r} is not an executable file")
        return found
    return shutil.which(REAL_BINARY)


def start_toxiproxy(kind: Kind = "auto", *, seed: int | None = None, in_thread: bool = False,
                    timeout: float = 15.0) -> ToxiproxyHandle:
    """Start a server on a free loopback port and wait until its API answers.

    kind: "real" requires the Go binary, "builtin" never uses it, "auto" prefers it.
    in_thread: run the built-in server on a thread of this process instead of a subprocess.
    seed: passed to either server (`-seed` for the real one, `--seed` for the built-in one).
    """
    if kind not in ("auto", "real", "builtin"):
        raise ValueError(f"kind must be auto, real or builtin, not {kind!r}")
    binary = find_real_toxiproxy() if kind != "builtin" else None
    if kind == "real" and binary is None:
        raise ToxiproxyNotFound(f"no Toxiproxy server binary on PATH or in {ENV_SERVER}")
    if binary is not None:
        return _start_real(binary, seed, timeout)
    if in_thread:
        thread = BuiltinServerThread(LOOPBACK, 0, seed=seed)
        url = thread.start(timeout)
        return ToxiproxyHandle("builtin", LOOPBACK, int(url.rsplit(":", 1)[1]), _thread=thread)
    return _start_builtin_process(seed, timeout)


def _start_real(binary: str, seed: int | None, timeout: float) -> ToxiproxyHandle:
    # The Go server cannot report a port it picked itself, so reserve one; the window between
    # closing this socket and the server binding it is small, and a clash fails loudly below.
    port = _free_port()
    command = [binary, "-host", LOOPBACK, "-port", str(port)]
    if seed is not None:
        command += ["-seed", str(seed)]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    handle = ToxiproxyHandle("real", LOOPBACK, port, _process=process)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LaunchError(f"{binary} exited with status {process.returncode} before serving")
        try:
            if httpx.get(f"{handle.api_url}/version", timeout=1.0).status_code == 200:
                return handle
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    handle.stop()
    raise LaunchError(f"{binary} did not answer on {handle.api_url} within {timeout:.0f}s")


def _start_builtin_process(seed: int | None, timeout: float) -> ToxiproxyHandle:
    command = [sys.executable, "-m", "fault_proxy.tcp", "serve", "--api", f"{LOOPBACK}:0"]
    if seed is not None:
        command += ["--seed", str(seed)]
    # stderr goes to a file so a failed start can say why; it never carries payload bytes.
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=errors)
        line = _read_line(process, timeout)
        if not line.startswith(READY_PREFIX):
            _terminate(process, 5.0)
            errors.seek(0)
            last = errors.read().decode("utf-8", "replace").strip().splitlines()[-1:]
            detail = f": {last[0]}" if last else ""
            raise LaunchError(f"the built-in server did not announce its API address{detail}")
    url = line[len(READY_PREFIX):].strip()
    host_port = url.removeprefix("http://")
    host, _, port = host_port.rpartition(":")
    return ToxiproxyHandle("builtin", host, int(port), _process=process)


def _read_line(process: subprocess.Popen[bytes], timeout: float) -> str:
    """First stdout line of `process`, or "" on timeout/exit (readline alone could block forever)."""
    result: list[bytes] = []
    stdout = process.stdout
    if stdout is None:
        return ""
    reader = threading.Thread(target=lambda: result.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0].decode("utf-8", "replace") if result else ""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def _terminate(process: subprocess.Popen[bytes], timeout: float) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)
    if process.stdout is not None:
        process.stdout.close()
