"""The warm launcher's client: runs of a Python sink forked from a process that imported it once.

A sink file may declare ``warm_start`` (its console script's entry point and the modules worth
importing ahead). A command whose first argument is that console script, installed beside the
harness's own Python with exactly that entry point, then runs as a fork of one server process per
entry (certification.warm_fork) instead of a fresh interpreter: the same function, arguments,
environment, working directory and streams, minus about 0.5 s of imports per run. Anything else (a
prefix such as a network namespace's, another interpreter, a server that cannot start) launches cold,
through the same go-signal protocol, so the warm path is an optimisation and never a requirement.

``WarmProcess`` is the harness's handle on one forked run: its pid (unreaped until ``reap``, so a kill
by pid cannot reach anyone else), its stdout, whether it has exited, and its reaping through the server.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import IO, Any

from certification.netns import namespace_path
from certification.procfs import has_exited
from certification.services import ServiceUnavailable

READY_TIMEOUT_S = 60.0
"""The server's imports (about 1 s, several on a loaded host) before it answers ready."""
REPLY_TIMEOUT_S = 30.0
MAX_REPLY = 1 << 16


class WarmStartUnavailable(ServiceUnavailable):
    """The server could not start (its runs launch cold) or stopped answering (a harness outage: exit 3)."""


@dataclass(frozen=True, slots=True)
class WarmEntry:
    entry: str
    """``module:function`` of the console script."""
    preload: tuple[str, ...]


@cache
def _console_script(entry: str) -> str | None:
    """The path of the console script beside this Python whose entry point is ``entry``, if any."""
    bin_dir = Path(sys.executable).parent
    for point in entry_points(group="console_scripts"):
        if point.value == entry and (bin_dir / point.name).is_file():
            return str(bin_dir / point.name)
    return None


def applies(warm: WarmEntry, argv: tuple[str, ...]) -> bool:
    """Is ``argv`` a run of ``warm``'s console script, in this Python's own environment?"""
    script = _console_script(warm.entry)
    return script is not None and bool(argv) and argv[0] == script


class _Server:
    """One warm server and the socket to it; a lock keeps each request and its reply together."""

    def __init__(self, warm: WarmEntry) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._socket, self._lock = ours, threading.Lock()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "certification.warm_fork", str(theirs.fileno()), warm.entry, *warm.preload],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
        finally:
            theirs.close()
        ours.settimeout(READY_TIMEOUT_S)
        answer = self._receive()
        if not answer.get("ready"):
            self.close()
            raise WarmStartUnavailable(str(answer.get("error", "the warm server did not start")))
        ours.settimeout(REPLY_TIMEOUT_S)

    def _receive(self) -> dict[str, Any]:
        try:
            data = self._socket.recv(MAX_REPLY)
        except OSError as exc:
            raise WarmStartUnavailable(f"the warm server did not answer ({type(exc).__name__})") from None
        if not data:
            raise WarmStartUnavailable("the warm server exited")
        answer: dict[str, Any] = json.loads(data)
        return answer

    def ask(self, request: Mapping[str, Any], fds: tuple[int, ...] = ()) -> dict[str, Any]:
        with self._lock:
            try:
                socket.send_fds(self._socket, [json.dumps(request).encode()], list(fds))
            except OSError as exc:
                raise WarmStartUnavailable(f"the warm server is gone ({type(exc).__name__})") from None
            return self._receive()

    def close(self) -> None:
        self._socket.close()  # the server's end of the protocol: it exits
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class WarmServers:
    """The warm servers of one harness process, one per entry, started on first use. A server that
    failed to start is not tried again: its runs launch cold."""

    def __init__(self) -> None:
        self._servers: dict[WarmEntry, _Server | None] = {}
        self._lock = threading.Lock()

    def server(self, warm: WarmEntry) -> _Server | None:
        with self._lock:
            if warm not in self._servers:
                try:
                    self._servers[warm] = _Server(warm)
                except WarmStartUnavailable as exc:
                    sys.stderr.write(f"certify: warm start of {warm.entry} unavailable ({exc}); "
                                     "its runs start cold\n")
                    self._servers[warm] = None
            return self._servers[warm]

    def close(self) -> None:
        with self._lock:
            for server in self._servers.values():
                if server is not None:
                    server.close()
            self._servers.clear()


SERVERS = WarmServers()
"""The process's servers: launching is per process, like the children it starts. A run closes them
when it ends (certification.execute); whatever else started one closes it at exit."""
atexit.register(SERVERS.close)


class WarmProcess:
    """One run forked by a warm server, held until the go file exists."""

    def __init__(self, server: _Server, argv: tuple[str, ...], cwd: Path, env: Mapping[str, str], go: Path, *,
                 netns: str | None = None) -> None:
        self._server = server
        read_end, write_end = os.pipe()
        request = {"op": "spawn", "argv": list(argv), "cwd": str(cwd), "env": dict(env), "go": str(go),
                   "netns": None if netns is None else namespace_path(netns)}
        try:
            answer = server.ask(request, (write_end,))
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)  # the child holds its own copy: end of file when it exits
        self.pid: int = int(answer["pid"])
        self.stdout: IO[bytes] = os.fdopen(read_end, "rb")

    def exited(self) -> bool:
        return has_exited(self.pid)

    def kill(self) -> None:
        with suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def reap(self) -> tuple[int, float]:
        """The exit code (negative: the signal) and CPU seconds; ask only once ``exited()``."""
        answer = self._server.ask({"op": "reap", "pid": self.pid})
        return int(answer["code"]), float(answer["cpu"])
