"""Worker-time records: what each execution of the operator cost the worker, from its own process.

Each execution (``execute``, ``execute_complete``, ``execute_resume``) appends one JSON line to
``<records_dir>/<dag>.<task>.jsonl`` (when the operator is given a records directory): wall
instants of entry and exit, the task process's start instant (``/proc/self/stat``: the worker
time Airflow spent before the operator ran is part of the task's time too), the process CPU
seconds, and which step followed. Identifiers and figures only.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def process_started_wall() -> float | None:
    """Wall-clock instant this process started (Linux ``/proc``); None where unknown."""
    try:
        fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
        ticks = int(fields[19])  # field 22 (starttime), counted after the command name
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))


@dataclass(slots=True)
class ExecutionClock:
    phase: str
    started_wall: float = field(default_factory=time.time)
    started_cpu: float = field(default_factory=time.process_time)
    started_perf: float = field(default_factory=time.perf_counter)

    def record(self, records_dir: str | None, identity: dict[str, Any], *, step: str) -> None:
        if not records_dir:
            return
        line = {
            **identity, "phase": self.phase, "step": step, "pid": os.getpid(),
            "entered_wall": self.started_wall, "exited_wall": time.time(),
            "operator_seconds": round(time.perf_counter() - self.started_perf, 6),
            "operator_cpu_seconds": round(time.process_time() - self.started_cpu, 6),
            "process_started_wall": process_started_wall(),
        }
        name = f"{identity.get('dag_id', 'dag')}.{identity.get('task_id', 'task')}.jsonl".replace("/", "_")
        directory = Path(records_dir)
        directory.mkdir(parents=True, exist_ok=True)
        data = (json.dumps(line, sort_keys=True) + "\n").encode()
        descriptor = os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(descriptor, data)  # one write of one line: concurrent tasks never interleave
        finally:
            os.close(descriptor)
