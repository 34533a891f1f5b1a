"""The bench's profiling entry writes CPU-timed stats for a CLI ``main`` and passes its exit status
on; ``python -m cProfile`` wrote nothing for the ``delivery`` script, which ends with ``os._exit``."""

from __future__ import annotations

import os
import pstats
import subprocess
import sys
from pathlib import Path

import pytest

CLI = (
    "import sys, time\n"
    "def burn_cpu():\n"
    "    end = time.process_time() + 0.05\n"
    "    while time.process_time() < end:\n"
    "        pass\n"
    "def main(argv):\n"
    "    burn_cpu()\n"
    "    if argv:\n"
    "        raise SystemExit(int(argv[0]))\n"
)


def _profile(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    (tmp_path / "toy_cli.py").write_text(CLI)
    out = tmp_path / "out.pstats"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "certification.bench.cpu_profile", str(out), *args],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    return done, out


@pytest.mark.parametrize(("argv", "status"), [((), 0), (("3",), 3)])
def test_stats_are_written_and_the_status_passed_on(tmp_path: Path, argv: tuple[str, ...], status: int) -> None:
    done, out = _profile(tmp_path, "toy_cli:main", *argv)
    assert done.returncode == status, done.stderr
    functions = {name: row for (_, _, name), row in pstats.Stats(str(out)).stats.items()}  # type: ignore[attr-defined]
    assert functions["burn_cpu"][3] >= 0.04  # cumulative CPU seconds of the busy loop


def test_the_sink_entry_returns_to_the_profiler(tmp_path: Path) -> None:
    done, out = _profile(tmp_path, "sink.cli:main", "--help")
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 0


@pytest.mark.parametrize("args", [(), ("only-out",), ("out", "no-colon")])
def test_bad_usage_is_exit_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = subprocess.run([sys.executable, "-m", "certification.bench.cpu_profile", *args], capture_output=True,
                          text=True, timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 2 and "usage:" in done.stderr
