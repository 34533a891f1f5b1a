"""No orphan processes: whatever restproof started from a pytest process is gone once that process
is, after Ctrl-C (SIGINT), after SIGKILL (no teardown at all), and under pytest-xdist.

Every run gets a probe variable of its own; every process it starts inherits it, so the probe
finds all of them wherever they were reparented."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from plugin_runs import PLUGIN_TEST_LIMIT_S, environment, marked_processes, pytest_command, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(PLUGIN_TEST_LIMIT_S)]
HANGING_SINK = """\
schema_id: restproof.sink_under_test.v2
name: hang
role: certified
description: Never ends.
run: ["{python}", "-c", "import time; time.sleep(600)  # hanging-sink"]
result: none
"""
PARTS_TEST = """\
import pathlib, time

def test_parts_then_hang(restproof_proxy, restproof_tcp_proxy):
    restproof_tcp_proxy.create("receiver", restproof_proxy.url)
    pathlib.Path("parts-ready").write_text("ready")
    time.sleep(600)
"""
START_LIMIT_S = 600.0
"""How long the parts may take to come up on a loaded machine before the test gives up."""
GONE_LIMIT_S = 60.0


def _start(repository: Path, probe: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(pytest_command(*args), cwd=repository,
                            env=environment(repository, {"RESTPROOF_TEST_PROBE": probe}),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _running(probe: str, what: str, count: int = 1) -> bool:
    return sum(what in cmdline for cmdline in marked_processes(probe).values()) >= count


def _stop(process: subprocess.Popen[str]) -> str:
    try:
        output, _ = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    return output


def _assert_all_gone(probe: str, process: subprocess.Popen[str], output: str) -> None:
    gone = wait_until(lambda: not marked_processes(f"RESTPROOF_TEST_PROBE={probe}"), GONE_LIMIT_S)
    left = marked_processes(f"RESTPROOF_TEST_PROBE={probe}")
    for pid in left:  # never leave them to the next test, whatever this one concludes
        os.kill(pid, signal.SIGKILL)
    assert gone, f"left running: {left}\n{output[-3000:]}"


def _hanging_rows(example: Path, probe: str, *args: str) -> subprocess.Popen[str]:
    (example / "sinks" / "hang.yaml").write_text(HANGING_SINK)
    return _start(example, probe, "-m", "restproof_row", "--restproof-sink", "sinks/hang.yaml",
                  "--restproof-run-timeout", "900", *args)


def test_ctrl_c_during_a_row_leaves_no_process(example: Path) -> None:
    probe = uuid.uuid4().hex
    process = _hanging_rows(example, probe, "--restproof-row", "sync.none")
    try:
        assert wait_until(lambda: _running(f"RESTPROOF_TEST_PROBE={probe}", "hanging-sink"), START_LIMIT_S)
        started = marked_processes(f"RESTPROOF_TEST_PROBE={probe}").values()
        assert any("mock-receiver" in cmdline for cmdline in started)
        assert any("fault_proxy" in cmdline for cmdline in started)
        process.send_signal(signal.SIGINT)  # to pytest alone, not its process group
        output = _stop(process)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output[-3000:]
    _assert_all_gone(probe, process, output)


def test_sigkill_of_pytest_leaves_no_process(example: Path) -> None:
    (example / "tests" / "test_hang.py").write_text(PARTS_TEST)
    probe = uuid.uuid4().hex
    process = _start(example, probe, "tests/test_hang.py")
    try:
        assert wait_until((example / "parts-ready").exists, START_LIMIT_S)
        started = marked_processes(f"RESTPROOF_TEST_PROBE={probe}").values()
        assert any("mock-receiver" in cmdline for cmdline in started)
        assert any("fault_proxy.tcp" in cmdline for cmdline in started)
        process.kill()  # no teardown, no atexit: only the watchdog is left to act
        output = _stop(process)
    finally:
        if process.poll() is None:
            process.kill()
    _assert_all_gone(probe, process, output)


def test_ctrl_c_of_an_xdist_run_leaves_no_process(example: Path) -> None:
    probe = uuid.uuid4().hex
    process = _hanging_rows(example, probe, "-n", "2", "--restproof-row", "sync.none",
                            "--restproof-row", "sync.cut.request")
    try:
        # One hanging sink per worker: each worker started its own receiver and proxy for it.
        assert wait_until(lambda: _running(f"RESTPROOF_TEST_PROBE={probe}", "hanging-sink", 2), START_LIMIT_S)
        started = marked_processes(f"RESTPROOF_TEST_PROBE={probe}").values()
        assert sum("mock-receiver" in cmdline for cmdline in started) == 2
        process.send_signal(signal.SIGINT)
        output = _stop(process)
    finally:
        if process.poll() is None:
            process.kill()
    _assert_all_gone(probe, process, output)
