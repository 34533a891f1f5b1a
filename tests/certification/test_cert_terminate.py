"""A run that is terminated (a CI job cancelled, a `kill`) stops every process it started, as on Ctrl-C:
no receiver, proxy, warm server or sink outlives it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from certification.procfs import children_of, has_exited

CERTIFY = str(Path(sys.executable).with_name("certify"))


def _descendants(pid: int) -> dict[int, str]:
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        for child in children_of(todo.pop()):
            try:
                found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            todo.append(child)
    return found


@pytest.mark.slow
def test_a_terminated_run_stops_every_process_it_started(tmp_path: Path) -> None:
    run = subprocess.Popen([CERTIFY, "run", "--quick", "--only", "sync.kill.after_commit", "--identity-examples", "0",
                            "--parallel", "1", "--out", str(tmp_path / "out")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, started = time.monotonic() + 120, {}
        while time.monotonic() < deadline:  # until a receiver and the warm server run beside a sink
            started = _descendants(run.pid)
            commands = " ".join(started.values())
            if all(name in commands for name in ("mock-receiver", "certification.warm_fork", "fault_proxy serve")):
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"the run never started its services: {sorted(started.values())}")
        started.update(_descendants(run.pid))
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=120)
    finally:
        run.kill()
        run.wait()
    deadline = time.monotonic() + 15
    alive = dict(started)
    while alive and time.monotonic() < deadline:
        alive = {pid: command for pid, command in alive.items() if not has_exited(pid)}
        time.sleep(0.1)
    assert not alive, sorted(alive.values())
