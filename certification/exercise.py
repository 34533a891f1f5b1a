"""Whether a row's runs are evidence at all, before any counter is read.

Zero duplicates, false successes, unproved resends and silent losses mean something only when the
row did what it says and the sink answered in its documented vocabulary. Two rules, each its own
reason in the verdict of a certified sink:

* A row whose fault kills a worker must see it killed by SIGKILL: the first worker for a proxy
  kill or a hold-kill-release (the harness kills it), some run for a crash point (armed until a
  run dies on it). A crash point the code never reaches, or a kill that came too late, leaves a
  row that passes without having tested anything.
* Every run must end with a documented exit class (0 done, 3 unavailable, 4 effect unknown,
  partial or manual authority, 5 proven terminal receiver failure), except the killed one. An
  internal error (1), a refusal of the catalog's own valid input (2) or an unexpected signal is a
  crash: a sink that crashes on every run sends nothing and so counts no violation, and must not
  pass for it.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence

KILLING_FAULTS = frozenset({"failpoint", "proxy_kill", "hold_kill_release"})
DOCUMENTED_EXITS = frozenset({0, 3, 4, 5})
KILLED = -int(signal.SIGKILL)
"""subprocess's return code of a process killed by SIGKILL."""


def exercise_problems(fault_type: str, exit_codes: Sequence[int]) -> tuple[str, ...]:
    if not exit_codes:
        return ("the sink never ran",)
    problems: list[str] = []
    killed_run = None
    if fault_type in KILLING_FAULTS:
        # The harness kills the first worker itself; a crash point stays armed until a run dies on
        # it (an async child meets its verification points only in a later run).
        candidates = range(len(exit_codes)) if fault_type == "failpoint" else range(1)
        killed_run = next((index for index in candidates if exit_codes[index] == KILLED), None)
        if killed_run is None:
            where = "no run was" if fault_type == "failpoint" else f"run 1 exited {exit_codes[0]} instead of being"
            problems.append(f"the {fault_type} fault never fired: {where} killed, so the row tested nothing")
            killed_run = -1 if fault_type == "failpoint" else 0
    for index, code in enumerate(exit_codes):
        if index != killed_run and code not in DOCUMENTED_EXITS:
            problems.append(f"run {index + 1} exited {code}: not a documented exit class "
                            "(a crash or an internal error)")
    return tuple(problems)
