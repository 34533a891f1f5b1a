"""How a sink's process starts: cold (a fresh interpreter through a launcher that ``exec``s the
sink) or warm (a fork of a server that imported the sink once: certification.warm_start). Either way
the process is held until the go file exists, its pid is the sink's from the start, and it stays
unreaped until the harness reaps it, so a kill by pid reaches that sink and no one else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from certification.netns import exec_prefix
from certification.warm_start import SERVERS, WarmEntry, WarmProcess, applies


@dataclass(frozen=True, slots=True)
class Invocation:
    """What to start: a sink's command, its working directory and environment, and how."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    warm: WarmEntry | None = None
    """Fork it from a warm server when ``argv`` is that entry's console script (else a cold start)."""
    netns: str | None = None
    """Run it in this named network namespace (another host: certification.netns)."""


_LAUNCHER = (
    "import os, sys, time\n"
    "go = sys.argv[1]\n"
    "deadline = time.monotonic() + 30\n"
    "while not os.path.exists(go) and time.monotonic() < deadline:\n"
    "    time.sleep(0.005)\n"
    "if not os.path.exists(go):\n"
    "    sys.exit(70)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


class ColdProcess:
    """The launcher, which ``exec``s the sink at the go signal: the harness's own child."""

    def __init__(self, invocation: Invocation, go: Path) -> None:
        self.process = subprocess.Popen(
            [*exec_prefix(invocation.netns), sys.executable, "-I", "-S", "-c", _LAUNCHER, str(go), *invocation.argv],
            cwd=invocation.cwd, env=dict(invocation.env), stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        )
        self.pid = self.process.pid
        assert self.process.stdout is not None
        self.stdout: IO[bytes] = self.process.stdout

    def exited(self) -> bool:
        """Has it exited (without reaping it)?"""
        try:
            status = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
        except ChildProcessError:
            return True
        return status is not None

    def kill(self) -> None:
        self.process.kill()

    def reap(self) -> tuple[int, float]:
        """Reap with wait4 (the exit status and the process's CPU in one call); Popen learns the code."""
        try:
            _, status, usage = os.wait4(self.pid, 0)
        except ChildProcessError:  # already reaped by Popen itself
            return self.process.wait(), 0.0
        code = os.waitstatus_to_exitcode(status)
        self.process.returncode = code
        return code, usage.ru_utime + usage.ru_stime


SinkProcess = ColdProcess | WarmProcess


def start(invocation: Invocation, go: Path) -> SinkProcess:
    warm = invocation.warm
    if warm is not None and applies(warm, invocation.argv):
        server = SERVERS.server(warm)
        if server is not None:
            return WarmProcess(server, invocation.argv, invocation.cwd, invocation.env, go, netns=invocation.netns)
    return ColdProcess(invocation, go)
