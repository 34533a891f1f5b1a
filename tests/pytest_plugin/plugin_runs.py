"""Run pytest in a process of its own on a directory, and read what it reported (its JUnit XML)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

RUN_LIMIT_S = 900.0
"""A bound on any pytest run of these tests (a hang fails the test, never blocks the suite)."""
PLUGIN_TEST_LIMIT_S = 1000
"""pytest-timeout's bound on a test that runs pytest (the suite's default, 300 s, is too short for a
run that starts its own receivers and proxies on a loaded machine; each run has its own bound)."""


@dataclass(frozen=True)
class Case:
    classname: str
    name: str
    outcome: str
    """``passed``, ``failed``, ``error`` or ``skipped``."""
    message: str


@dataclass(frozen=True)
class PytestRun:
    returncode: int
    output: str
    cases: tuple[Case, ...]

    def outcomes(self, classname: str) -> dict[str, str]:
        return {case.name: case.outcome for case in self.cases if case.classname == classname}

    def case(self, classname: str, name: str) -> Case:
        return next(case for case in self.cases if (case.classname, case.name) == (classname, name))


def environment(repository: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The repository's package importable (as `pip install -e .` would make it) by pytest and by the
    sink processes restproof starts; no bytecode written into it."""
    env = {**os.environ, "PYTHONPATH": str(repository), "PYTHONDONTWRITEBYTECODE": "1", **(extra or {})}
    env.pop("PYTEST_XDIST_WORKER", None)  # this suite may itself run under xdist
    env.pop("PYTEST_ADDOPTS", None)
    return env


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]


def run_pytest(repository: Path, *args: str, extra_env: Mapping[str, str] | None = None,
               limit: float = RUN_LIMIT_S) -> PytestRun:
    junit = repository / "junit.xml"
    junit.unlink(missing_ok=True)
    completed = subprocess.run(pytest_command(f"--junitxml={junit}", *args), cwd=repository,
                               env=environment(repository, extra_env), capture_output=True, text=True,
                               timeout=limit, check=False)
    return PytestRun(completed.returncode, completed.stdout + completed.stderr, read_junit(junit))


def read_junit(path: Path) -> tuple[Case, ...]:
    if not path.exists():
        return ()
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                outcome = "failed" if tag == "failure" else tag
                message = (found.get("message") or "") + "\n" + (found.text or "")
                break
        cases.append(Case(case.get("classname", ""), case.get("name", ""), outcome, message))
    return tuple(cases)


def marked_processes(probe: str) -> dict[int, str]:
    """pid -> command line of every live process whose environment holds ``probe`` (``NAME=value``),
    read from /proc: what a pytest started with that variable left running, however deep."""
    found = {}
    wanted = probe.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if wanted in environ.split(b"\0"):
            found[int(name)] = cmdline.replace(b"\0", b" ").decode("utf-8", "replace")
    return found


def wait_until(condition: Callable[[], bool], limit: float, pause: float = 0.2) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(pause)
    return condition()
