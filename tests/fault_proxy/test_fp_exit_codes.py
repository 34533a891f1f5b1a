"""Exit codes of `fault-proxy serve` and `fault-proxy tcp serve`: 2 invalid arguments (one line, no
traceback), 3 an address cannot be bound, 0 after SIGTERM."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fault_proxy.cli import app

pytestmark = pytest.mark.timeout(60)

SERVE = [sys.executable, "-m", "fault_proxy", "serve"]
TCP_SERVE = [sys.executable, "-m", "fault_proxy.tcp", "serve"]
BASE = ["--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1", "--control", "127.0.0.1:0"]


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "╭" not in stderr
    return lines[0]


def test_ready_file_in_a_missing_directory_exits_2_before_binding(tmp_path: Path) -> None:
    # In-process: had the check not happened before serving, this call would bind and never return.
    result = CliRunner().invoke(app, ["serve", *BASE, "--ready-file", str(tmp_path / "no" / "ready.json")])
    assert result.exit_code == 2
    assert "--ready-file" in result.output and "does not exist" in result.output
    assert "Traceback" not in result.output


def test_ready_file_that_is_a_directory_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", *BASE, "--ready-file", str(tmp_path)])
    assert result.exit_code == 2 and "is a directory" in result.output


@pytest.mark.parametrize(
    "args",
    [
        [*BASE[:4], "--control", "127.0.0.1:" + "9" * 5000],  # 5,000-digit port
        [*BASE, "--seed", str(2**63)],
        [*BASE, "--seed", "9" * 5000],
        [*BASE, "--max-body-bytes", "1023"],
        [*BASE, "--max-body-bytes", str(2**31 + 1)],
        [*BASE, "--body-timeout", "0"],
        [*BASE, "--body-timeout", "nan"],
        [*BASE, "--body-timeout", "inf"],
        [*BASE, "--log-level", "TRACE2"],
        ["--listen", "127.0.0.1:0"],  # missing options: click's usage error, as one line
        [*BASE, "--no-such-option"],
    ],
)
def test_invalid_arguments_exit_2_with_one_line(args: list[str]) -> None:
    result = subprocess.run([*SERVE, *args], capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2, result.stderr
    assert _one_error_line(result.stderr).startswith("fault-proxy: error: ")
    assert len(result.stderr) < 400  # the 5,000-digit value is not echoed whole


@pytest.mark.parametrize("api", ["nonsense", "127.0.0.1:" + "9" * 5000, "127.0.0.1:70000", "h\u00e9st:80"])
def test_tcp_invalid_api_exits_2_with_one_line(api: str) -> None:
    result = subprocess.run([*TCP_SERVE, "--api", api], capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2, result.stderr
    assert "HOST:PORT" in _one_error_line(result.stderr)


def test_tcp_taken_port_exits_3() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run([*TCP_SERVE, "--api", f"127.0.0.1:{port}"], capture_output=True, text=True,
                                timeout=30, check=False)
    assert result.returncode == 3
    assert "cannot listen" in _one_error_line(result.stderr)


def test_control_port_taken_exits_3() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        args = [*BASE[:4], "--control", f"127.0.0.1:{port}"]
        result = subprocess.run([*SERVE, *args], capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 3
    assert "cannot listen on control address" in _one_error_line(result.stderr)


def _sigterm_exit_code(command: list[str], ready_marker: str) -> tuple[int, str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    deadline = time.monotonic() + 30
    line = process.stdout.readline()  # the ready line comes once the handlers are installed
    assert ready_marker in line and time.monotonic() < deadline
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=20)
    return process.returncode, stderr


def test_sigterm_exits_0_for_the_http_phase_proxy() -> None:
    code, stderr = _sigterm_exit_code([*SERVE, *BASE], '"event": "ready"')
    assert code == 0 and "Traceback" not in stderr


def test_sigterm_exits_0_for_the_tcp_proxy() -> None:
    code, stderr = _sigterm_exit_code([*TCP_SERVE, "--api", "127.0.0.1:0"], "listening on")
    assert code == 0 and "Traceback" not in stderr  # uvicorn alone would re-raise SIGTERM: 143


def test_help_exits_0() -> None:
    result = subprocess.run([*SERVE, "--help"], capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 0 and "--ready-file" in result.stdout
