"""No orphan processes: whatever restproof starts from a pytest process ends with that process.

Fixture teardown stops what a test started; pytest unwinds its fixtures on Ctrl-C too. That does
not cover a pytest process that is killed outright (SIGKILL, the OOM killer, an xdist worker its
controller tears down, a CI job cancelled): its children are reparented and live on, holding ports
and files. So every process restproof starts carries a marker in its environment (``MARKER_ENV``,
inherited by anything it starts in turn), and one watchdog process per pytest process waits for
that process to end, however it ends: it reads a pipe that only the pytest process holds open, and
end of file comes when that process is gone. It then terminates every process still carrying the
marker (SIGTERM, then SIGKILL), found through ``/proc``: Jenkins finds a build's leftovers the same
way (its ``BUILD_ID`` variable). Where there is no ``/proc`` the watchdog finds nothing to end.

The marker is set in ``os.environ`` only while restproof starts something (``Reaper.marked``), so a
process the test itself starts is the test's own business.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

MARKER_ENV = "RESTPROOF_PYTEST_RUN"
_WATCHDOG = r"""
import os, signal, sys, time
marker = sys.argv[1].encode()
try:
    while sys.stdin.buffer.read(4096):
        pass
except BaseException:
    pass
def marked():
    me = os.getpid()
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open("/proc/" + name + "/environ", "rb") as handle:
                if marker in handle.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found
for sig in (signal.SIGTERM, signal.SIGKILL):
    pids = marked()
    if not pids:
        break
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    deadline = time.monotonic() + 5
    while marked() and time.monotonic() < deadline:
        time.sleep(0.05)
"""
WATCHDOG_EXIT_S = 15.0


class Reaper:
    """One per pytest process; the watchdog starts with the first ``marked`` block."""

    def __init__(self) -> None:
        self.token = f"{os.getpid()}-{uuid.uuid4().hex}"
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._pipe: IO[bytes] | None = None

    @property
    def marker(self) -> str:
        """The ``NAME=value`` entry every process started under ``marked`` has in its environment."""
        return f"{MARKER_ENV}={self.token}"

    def _start_watchdog(self) -> None:
        if self._watchdog is not None:
            return
        environment = {key: value for key, value in os.environ.items() if key != MARKER_ENV}
        # Its own session: a Ctrl-C at the terminal must not end the watchdog before it has looked.
        self._watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHDOG, self.marker], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment, start_new_session=True)
        self._pipe = self._watchdog.stdin

    @contextmanager
    def marked(self) -> Iterator[None]:
        """Processes started inside the block carry the marker (and so do their own children)."""
        self._start_watchdog()
        previous = os.environ.get(MARKER_ENV)
        os.environ[MARKER_ENV] = self.token
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop(MARKER_ENV, None)
            else:
                os.environ[MARKER_ENV] = previous

    def close(self) -> None:
        """At the end of the pytest process: the watchdog ends what is left, and exits."""
        watchdog, pipe, self._watchdog, self._pipe = self._watchdog, self._pipe, None, None
        if watchdog is None or pipe is None:
            return
        pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):  # it keeps working on its own, in no one's way
            watchdog.wait(timeout=WATCHDOG_EXIT_S)
