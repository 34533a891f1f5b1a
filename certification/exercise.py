"""Whether a row's runs are evidence at all, before any counter is read.

Zero violations mean something only when the row's fault acted on the sink and the sink answered in
its documented vocabulary. For the certified sink each of these is a reason to FAIL the row:

* the fault never acted (``FaultEvidence.fired`` is False): a proxy rule that never fired because the
  sink sent nothing, a kill that never happened, a crash point the code never reached. Such a row
  tested nothing;
* a run hung and the harness killed it at its time limit: that kill is never the row's fault;
* a run ended outside the documented exit classes (0 done, 3 unavailable, 4 effect unknown, partial
  or manual authority, 5 proven terminal receiver failure), other than the run the fault killed: an
  internal error (1), a refusal of the catalog's own valid input (2) or an unexpected signal is a
  crash, and a sink that crashes on every run sends nothing and counts no violation;
* a run that ended by itself without the result the sink declares (``reference_json``/``units_json``)
  broke its own contract.
"""

from __future__ import annotations

from certification.checkers import CheckResult, Status
from certification.history import History

KILLED = -9
DOCUMENTED_EXITS = frozenset({0, 3, 4, 5})
KILLING_FAULTS = frozenset({"failpoint", "proxy_kill", "hold_kill_release", "retention_lapse"})


def _killed_run(history: History) -> int | None:
    """The run the row's fault killed (1-based), if it did."""
    if history.fault.kind not in KILLING_FAULTS or not history.fault.fired:
        return None
    candidates = history.runs if history.fault.kind == "failpoint" else history.runs[:1]
    return next((run.index for run in candidates if run.exit_code == KILLED and not run.timed_out), None)


def exercised(history: History) -> CheckResult:
    reasons: list[str] = []
    if not history.runs:
        reasons.append("the sink never ran")
    if history.fault.fired is False:
        reasons.append(f"the {history.fault.kind} fault never acted on the sink ({history.fault.detail}): "
                       "the row tested nothing")
    killed = _killed_run(history)
    for run in history.runs:
        if run.timed_out:
            reasons.append(f"run {run.index} hung: the harness killed it at its time limit")
        elif run.index != killed and run.exit_code not in DOCUMENTED_EXITS:
            reasons.append(f"run {run.index} exited {run.exit_code}: not a documented exit class "
                           "(a crash or an internal error)")
        elif run.index != killed and run.result_problem is not None:
            reasons.append(f"run {run.index}: {run.result_problem}")
    return CheckResult("exercise", Status.INVALID if reasons else Status.VALID, len(reasons), tuple(reasons))
