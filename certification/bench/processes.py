"""Sinks under test as measured processes: exit code, stdout, wall time, CPU times and peak RSS.

The sink is started through the sinks-under-test launcher (``certification.sinks.Launched``), so
the pid is the sink's own after ``exec``. It is reaped with ``os.wait4``, whose ``ru_maxrss`` is
the kernel's high-water mark of that one process (the launcher's few MB before ``exec`` included,
which only ever adds), and whose CPU times are that process's alone, unlike ``RUSAGE_CHILDREN``,
which sums every child the harness ever reaped.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from certification.sinks import Invocation, Launched

TIMEOUT_S = 3600.0


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
    launched = Launched(invocation)
    process = launched.process
    assert process.stdout is not None
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.append(process.stdout.read() if process.stdout else b""),
                              daemon=True)
    reader.start()
    started = time.perf_counter()
    launched.go()
    killer = threading.Timer(timeout, lambda: _kill(process.pid))
    killer.start()
    try:
        _, status, usage = os.wait4(process.pid, 0)
    finally:
        killer.cancel()
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: tell Popen, so it never waits again
    reader.join(timeout=30)
    stdout = b"".join(chunks).decode("utf-8", "replace")[-1_000_000:]
    return Measured(process.returncode, stdout, wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss / 1024)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, 9)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (the receiver, the proxy), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
