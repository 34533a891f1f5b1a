"""A ``delivery`` process ends without the interpreter's teardown, but with everything the
interpreter would have done before it: the exit status, flushed output, joined non-daemon threads
and exit handlers."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from sink.cli.process import exit_status

REPO = Path(__file__).resolve().parents[2]


def _ended(body: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = ("import atexit, pathlib, sys, threading, time\n"
              "from sink.cli.process import run_and_end\n"
              f"out = pathlib.Path({str(tmp_path)!r})\n" + body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=REPO,
                          check=False)


def test_status_output_threads_and_exit_handlers_survive_the_skipped_teardown(tmp_path: Path) -> None:
    done = _ended(
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    (out / 'thread').write_text('joined')\n"
        "def entry():\n"
        "    threading.Thread(target=late).start()\n"
        "    atexit.register(lambda: (out / 'atexit').write_text('ran'))\n"
        "    sys.stdout.write('{\"ok\": true}')  # no newline: still in the buffer\n"
        "    sys.stderr.write('partial line')\n"
        "    raise SystemExit(3)\n"
        "run_and_end(entry)\n"
        "(out / 'after').write_text('run_and_end returned')\n", tmp_path)
    assert done.returncode == 3
    assert done.stdout == '{"ok": true}' and done.stderr == "partial line"
    assert (tmp_path / "thread").read_text() == "joined"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert not (tmp_path / "after").exists()  # the process ended there


def test_an_entry_that_returns_is_status_0_and_an_interrupt_propagates(tmp_path: Path) -> None:
    assert _ended("run_and_end(lambda: None)\n", tmp_path).returncode == 0
    interrupted = _ended("def entry():\n    raise KeyboardInterrupt\nrun_and_end(entry)\n", tmp_path)
    assert interrupted.returncode != 0 and "KeyboardInterrupt" in interrupted.stderr  # the interpreter's own end


@pytest.mark.parametrize(("code", "status", "printed"), [(None, 0, ""), (0, 0, ""), (4, 4, ""),
                                                         ("message", 1, "message\n")])
def test_exit_status_is_the_interpreters(code: object, status: int, printed: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_status(code) == status
    assert capsys.readouterr().err == printed


def test_the_delivery_script_and_python_m_end_through_it() -> None:
    (script,) = entry_points(group="console_scripts", name="delivery")
    assert script.value == "sink.cli:script"
    main_module = (REPO / "sink" / "cli" / "__main__.py").read_text()
    assert "script()" in main_module
    usage = subprocess.run([sys.executable, "-m", "sink.cli", "resume", "--no-such-option"], capture_output=True,
                           text=True, timeout=120, cwd=REPO, check=False)
    assert usage.returncode == 2 and "error[cli.usage]" in usage.stderr
