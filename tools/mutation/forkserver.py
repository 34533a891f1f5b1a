"""One long-lived worker per scratch copy: import pytest and the heavy third-party libraries once,
then fork a fresh child for every mutant run.

Why: a mutant run is mostly interpreter and plugin start-up (pytest, Hypothesis, pydantic,
psycopg...). Forking a process that already holds them saves that CPU on every mutant. The worker
never imports the project (sink, mock_receiver, fault_proxy, tests): each child imports them
fresh from the scratch copy, so it sees the mutant written just before the fork.

Protocol (JSON lines): the runner writes {"args": [...], "timeout": seconds}; the worker answers
{"verdict": "pass" | "fail" | "timeout", "rc": int}. The worker itself is single-threaded, so
forking it is safe.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import sys
import time

PRELOAD = (
    "pytest", "_pytest.python", "_pytest.fixtures", "hypothesis", "hypothesis.extra.pytestplugin",
    "pytest_timeout", "pydantic", "yaml", "jsonschema", "psycopg", "psycopg_pool", "httpx", "sqlite3",
)


def _child(args: list[str]) -> None:
    os.setsid()  # its own process group: a timeout kills the CLIs and servers it started too
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    code = importlib.import_module("pytest").main(args)
    os._exit(int(code))


def _wait(pid: int, timeout: float) -> tuple[str, int]:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            rc = os.waitstatus_to_exitcode(status)
            return ("pass" if rc == 0 else "fail"), rc
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout", -9
        time.sleep(0.02)


def main() -> int:
    scratch = sys.argv[1]
    os.chdir(scratch)
    sys.path[:0] = [scratch, os.path.dirname(os.path.abspath(__file__))]
    sys.dont_write_bytecode = True
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request["args"])
        verdict, rc = _wait(pid, float(request["timeout"]))
        sys.stdout.write(json.dumps({"verdict": verdict, "rc": rc}) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
