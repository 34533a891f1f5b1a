"""The end of a ``delivery`` process: no interpreter teardown.

A ``delivery`` process has imported some 450 modules (pydantic and the contract models, Typer,
httpcore, the journal); tearing them down at exit costs about 0.1 s of CPU (the same imports with
and without ``os._exit``, 20 alternated pairs) and took 15 % of a whole resume of 67 children
(9 alternated pairs of resumes: after / before 0.85), for nothing: every durable write is
committed and fsynced before ``main`` returns, and the journal and transport are closed by their
context managers. So the script ends as the interpreter would, minus the teardown: standard
streams flushed, non-daemon threads joined, exit handlers run (logging's included), then
``os._exit``. The certification's warm fork server ends its sink processes the same way, and the
reference sink's ``warm_start.entry`` names this script (``sink.cli:script``). ``main`` itself
still raises ``SystemExit``, so a caller in its own process (tests, an embedding program) keeps
its interpreter.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from contextlib import suppress


def exit_status(code: object) -> int:
    """What the interpreter makes of ``SystemExit(code)``: None is 0, an int is itself, anything
    else is printed on stderr and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    with suppress(OSError, ValueError):
        sys.stderr.write(f"{code}\n")
    return 1


def run_and_end(entry: Callable[[], object]) -> None:
    """Run ``entry`` (which ends by raising ``SystemExit``) and end the process without finalization.
    Any other exception (KeyboardInterrupt, say) propagates and the interpreter ends as usual."""
    try:
        entry()
        status = 0
    except SystemExit as exc:
        status = exit_status(exc.code)
    end_process(status)


def end_process(status: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):
            stream.flush()
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join()  # what the interpreter's shutdown waits for
    atexit._run_exitfuncs()  # the interpreter's own exit handlers (logging's flush), run as at exit
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)
