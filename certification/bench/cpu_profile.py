"""Run a CLI function under cProfile with a CPU timer and write its stats (what ``profile_split``
reads): ``python -m certification.bench.cpu_profile OUT MODULE:FUNCTION [ARGS...]``; FUNCTION is
called with ARGS as its ``argv`` and its exit status is this process's.

Why not ``python -m cProfile -m MODULE``: it times wall clock, so waiting on the receiver would
count as transport CPU; and it writes its stats only when the profiled code returns to it, which a
script that ends with ``os._exit`` never does (the ``delivery`` script does, ``sink.cli.process``).
The function here is a CLI's ``main``, which raises SystemExit and keeps the interpreter. The timer
is the process's CPU clock: cProfile follows the main thread, and CPU other threads spend while
it waits is charged to what it waits in.
"""

from __future__ import annotations

import cProfile
import importlib
import sys
import time


def _status(code: object) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or ":" not in args[1]:
        sys.stderr.write("usage: python -m certification.bench.cpu_profile OUT MODULE:FUNCTION [ARGS...]\n")
        return 2
    out, target, rest = args[0], args[1], args[2:]
    module_name, _, function_name = target.partition(":")
    profiler = cProfile.Profile(time.process_time)
    status = 0
    profiler.enable()  # before the import: start-up is part of what the split shows
    try:
        getattr(importlib.import_module(module_name), function_name)(rest)
    except SystemExit as exc:
        status = _status(exc.code)
    finally:
        profiler.disable()
        profiler.dump_stats(out)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
