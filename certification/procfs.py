"""What the kernel says about a process, read from ``/proc`` (Linux): its state and its children.

The harness reads these for processes that are not its own children (a journal server's backends, a
sink forked by the warm launcher), where ``waitid`` cannot answer.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, parent pid, ...), None once
    the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses


def process_state(pid: int) -> str | None:
    """The kernel's one-letter state of ``pid`` (``T``: stopped, ``Z``: exited, not yet reaped), None
    once it is gone."""
    fields = stat_fields(pid)
    return None if fields is None else fields[0]


def has_exited(pid: int) -> bool:
    """Has ``pid`` exited (a zombie, or already reaped)?"""
    return process_state(pid) in (None, "Z", "X")


def children_of(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (read from /proc)."""
    children = []
    for entry in Path("/proc").iterdir():
        fields = stat_fields(entry.name) if entry.name.isdigit() else None
        if fields is not None and int(fields[1]) == pid:
            children.append(int(entry.name))
    return children


def until_gone(pids: Sequence[int], timeout_s: float) -> list[int]:
    """Wait until every one of ``pids`` has exited (a zombie has); SIGKILL those still alive after
    ``timeout_s``. Returns the pids that had to be killed."""
    deadline = time.monotonic() + timeout_s
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if not has_exited(pid)]
        if alive:
            time.sleep(0.02)
    for pid in alive:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return alive
