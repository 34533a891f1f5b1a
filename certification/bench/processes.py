"""Sinks under test as measured processes: exit code, stdout, wall time, CPU times and peak RSS.

A small fresh Python (the measuring launcher) waits for the go signal, forks, ``exec``s the sink in
the child and reaps it with ``os.wait4``, whose ``ru_maxrss`` is the kernel's high-water mark of
that one process (VmHWM) and whose CPU times are that process's alone. Why not reap the sink from
the harness directly: a child forked from the harness starts as a copy of the harness's resident
pages, and ``ru_maxrss`` keeps that copy's size across ``exec``, so a 60 MB harness would put a
60 MB floor under every sink. The launcher's own image is a few MB.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from certification.procfs import stat_fields
from certification.sinks import Invocation

TIMEOUT_S = 3600.0
_LAUNCHER = (
    "import json, os, sys, time\n"
    "go, report = sys.argv[1], sys.argv[2]\n"
    "deadline = time.monotonic() + 30\n"
    "while not os.path.exists(go) and time.monotonic() < deadline:\n"
    "    time.sleep(0.005)\n"
    "started = time.perf_counter()\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    try:\n"
    "        os.execvp(sys.argv[3], sys.argv[3:])\n"
    "    finally:\n"
    "        os._exit(127)\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "wall = time.perf_counter() - started\n"
    "with open(report, 'w') as handle:\n"
    "    json.dump({'exit_code': os.waitstatus_to_exitcode(status), 'wall_s': wall, 'user_s': usage.ru_utime,\n"
    "               'system_s': usage.ru_stime, 'maxrss_kib': usage.ru_maxrss}, handle)\n"
)


@dataclass(frozen=True, slots=True)
class Measured:
    exit_code: int
    stdout: str
    wall_s: float
    user_s: float
    system_s: float
    peak_rss_mib: float

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.system_s


def run_measured(invocation: Invocation, timeout: float = TIMEOUT_S) -> Measured:
    invocation.cwd.mkdir(parents=True, exist_ok=True)
    go = invocation.cwd / f".go-{os.getpid()}-{time.monotonic_ns()}"
    report = go.with_suffix(".rusage.json")
    process = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(go), str(report), *invocation.argv], cwd=invocation.cwd,
        env=dict(invocation.env), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        start_new_session=True)  # one process group: a timeout ends the sink with its launcher
    go.touch()
    try:
        stdout, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, _ = process.communicate()
    go.unlink(missing_ok=True)
    try:
        usage = json.loads(report.read_text())
    except (OSError, ValueError):
        usage = {"exit_code": -signal.SIGKILL, "wall_s": 0.0, "user_s": 0.0, "system_s": 0.0, "maxrss_kib": 0}
    report.unlink(missing_ok=True)
    return Measured(int(usage["exit_code"]), stdout.decode("utf-8", "replace")[-1_000_000:], float(usage["wall_s"]),
                    float(usage["user_s"]), float(usage["system_s"]), int(usage["maxrss_kib"]) / 1024)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (the receiver, the proxy), from /proc."""
    fields = stat_fields(pid)
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
