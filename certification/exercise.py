"""Whether a row's runs are evidence at all, before any counter is read.

Zero duplicates, false successes, unproved resends and silent losses mean something only when the
row did what it says and the sink answered in its documented vocabulary. Two rules, each its own
reason in the verdict of a certified sink:

* A row whose fault kills the first worker (a crash point, a proxy kill, a hold-kill-release) must
  see that worker killed by SIGKILL. A crash point the code never reaches, or a kill that came too
  late, leaves a row that passes without having tested anything.
* Every run must end with a documented exit class (0 done, 3 unavailable, 4 effect unknown,
  partial or manual authority, 5 proven terminal receiver failure), except the first run of a
  killing row. An internal error (1), a refusal of the catalog's own valid input (2) or an
  unexpected signal is a crash: a sink that crashes on every run sends nothing and so counts no
  violation, and must not pass for it.
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
    first_is_the_kill = fault_type in KILLING_FAULTS
    if first_is_the_kill and exit_codes[0] != KILLED:
        problems.append(f"the {fault_type} fault never fired: run 1 exited {exit_codes[0]} instead of being "
                        "killed, so the row tested nothing")
    for run, code in enumerate(exit_codes, start=1):
        if run == 1 and first_is_the_kill:
            continue
        if code not in DOCUMENTED_EXITS:
            problems.append(f"run {run} exited {code}: not a documented exit class (a crash or an internal error)")
    return tuple(problems)
