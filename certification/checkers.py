"""Checkers: pure functions of a history, each returning valid, invalid or unknown with reasons.

Like Jepsen's checkers they compose: a row is invalid when any checker is, unknown when none is
invalid and any cannot tell (a proxy log that dropped entries, ground truth that could not be read),
valid otherwise. Each checker reads only what the harness witnessed (docs/certification.md,
"Checkers"): the wire as the tap recorded it, the proxy's log, the receiver's ledger and content
compared with the dataset. The sink's own words enter only as claims to be judged.

The unit is the day of the delivered scope, so a sink that batches or splits differently from the
reference sink is judged by what it did to each day.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from certification.history import History, RunKind, Snapshot, WireRequest
from certification.receiver_contract import MUTATION_ENDPOINTS


class Status(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    UNKNOWN = "unknown"


_RANK = {Status.VALID: 0, Status.UNKNOWN: 1, Status.INVALID: 2}


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    status: Status
    count: int = 0
    """Violations found (0 unless invalid)."""
    reasons: tuple[str, ...] = ()


def compose(results: Sequence[CheckResult]) -> Status:
    """invalid > unknown > valid."""
    return max((result.status for result in results), key=_RANK.__getitem__, default=Status.VALID)


def _result(name: str, reasons: list[str]) -> CheckResult:
    return CheckResult(name, Status.INVALID if reasons else Status.VALID, len(reasons), tuple(reasons))


def evidence_complete(history: History) -> CheckResult:
    """A witness with a gap proves nothing: the row is unknown, never valid."""
    gaps = []
    done = history.completeness
    if done.proxy_log_dropped:
        gaps.append(f"the proxy's log dropped {done.proxy_log_dropped} entr(y/ies)")
    if done.tap_overflow:
        gaps.append("the wire tap kept only part of a connection's bytes")
    if not done.ledger_read:
        gaps.append("the receiver's ground truth could not be read")
    if done.unmatched_proxy_entries:
        gaps.append(f"{done.unmatched_proxy_entries} proxy log entr(y/ies) match no recorded client request")
    if done.receiver_in_flight:
        gaps.append(f"the receiver was still working on {done.receiver_in_flight} request(s) when its "
                    f"ledger was read")
    if not history.snapshots:
        gaps.append("no snapshot of the receiver's content")
    return CheckResult("evidence", Status.UNKNOWN if gaps else Status.VALID, 0, tuple(gaps))


def duplicates(history: History) -> CheckResult:
    """An effect re-applying a day an earlier effect already applied (partition replacement), the
    same fence key applied twice, or extra copies of rows (an append applied twice)."""
    reasons: list[str] = []
    applied: set[str] = set()
    fences: set[str] = set()
    for effect in history.effects:
        again = sorted(applied & set(effect.days))
        if again and history.mutation_kind == "partition_replace":
            reasons.append(f"effect {effect.seq} re-applied {', '.join(again)}")
        elif effect.fence is not None and effect.fence in fences:
            reasons.append(f"effect {effect.seq} applied a fence key a second time")
        applied.update(effect.days)
        if effect.fence is not None:
            fences.add(effect.fence)
    settled = history.settled
    if settled is not None:
        reasons.extend(f"{state.day}: {state.surplus} row(s) applied more than once"
                       for state in settled.days if state.surplus)
    return _result("duplicates", reasons)


def out_of_scope(history: History) -> CheckResult:
    """Any effect or row outside the delivered scope (the receiver starts every row empty)."""
    universe = set(history.universe)
    reasons = [f"effect {effect.seq} changed {', '.join(sorted(set(effect.days) - universe))} outside the scope"
               for effect in history.effects if set(effect.days) - universe]
    worst = max((snapshot.outside_rows for snapshot in history.snapshots), default=0)
    if worst:
        reasons.append(f"{worst} row(s) held outside the delivered scope")
    return _result("out_of_scope", reasons)


def wrong_content(history: History) -> CheckResult:
    """Rows that match no row of the dataset: a changed value, a dropped or extra field."""
    reasons = []
    for snapshot in history.snapshots:
        for state in snapshot.days:
            if state.foreign:
                when = "settled" if snapshot.after_run == 0 else f"after run {snapshot.after_run}"
                reasons.append(f"{state.day} ({when}): {state.foreign} row(s) unlike any source row")
    return _result("wrong_content", sorted(set(reasons)))


def _claims(history: History) -> list[tuple[int, str, bool, Snapshot | None]]:
    """(run, day, explicit, snapshot after that run) for every day a delivery run claimed completed:
    an explicit per-day claim, or every day of the scope when the run ended 0 (an orchestrator reads
    exit 0 as "done"). An operator command's exit 0 says its step worked, not that the delivery is done."""
    claimed: list[tuple[int, str, bool, Snapshot | None]] = []
    for run in history.runs:
        if run.kind is RunKind.OPERATOR:
            continue
        snapshot = history.snapshot_after(run.index)
        explicit = {day for day, outcome in run.claims.items() if outcome == "completed"}
        claimed.extend((run.index, day, True, snapshot) for day in sorted(explicit))
        if run.exit_code == 0:
            claimed.extend((run.index, day, False, snapshot) for day in history.universe if day not in explicit)
    return claimed


def false_successes(history: History) -> CheckResult:
    """A day the sink explicitly called completed that the receiver did not hold exactly, right then."""
    reasons = []
    for run, day, explicit, snapshot in _claims(history):
        state = None if snapshot is None else snapshot.day(day)
        if explicit and state is not None and not state.correct:
            reasons.append(f"run {run} called {day} completed; the receiver held {state.actual_rows} of "
                           f"{state.expected_rows} row(s) ({state.missing} missing, {state.foreign} unlike the source)")
    return _result("false_successes", reasons)


def silent_losses(history: History) -> CheckResult:
    """A run ended 0 while a day it did not report on lacked rows at the receiver."""
    reasons = []
    for run, day, explicit, snapshot in _claims(history):
        state = None if snapshot is None else snapshot.day(day)
        if not explicit and state is not None and state.missing:
            reasons.append(f"run {run} exited 0 while {day} lacked {state.missing} row(s)")
    return _result("silent_losses", reasons)


def _overlap(first: WireRequest, second: WireRequest) -> bool:
    if first.targets is None or second.targets is None:
        return True  # unknown targets may be any day
    return bool(set(first.targets) & set(second.targets))


def unproved_resends(history: History) -> CheckResult:
    """A mutation request for a day after an earlier one that left the sink whole (so it cannot be
    proven not applied), unless both carry the same fence value to a receiver whose fence certifiably
    deduplicates it. Every request the tap recorded left the sink: a request that never did is not
    on the wire at all. An earlier request whose body never left the sink in full (the tap, in front
    of the proxy and the receiver, saw its connection end before the framing's last byte) was never
    a request any receiver could apply: what follows it resends nothing."""
    reasons = []
    ordered = sorted((request for request in history.requests if request.endpoint in MUTATION_ENDPOINTS),
                     key=lambda request: (request.at, request.seq))
    for index, request in enumerate(ordered):
        for earlier in ordered[:index]:
            if not earlier.body_complete or not _overlap(earlier, request):
                continue
            fenced = history.fence_deduplicates and request.fence is not None and request.fence == earlier.fence
            if not fenced:
                days = "unknown days" if request.targets is None else ", ".join(request.targets)
                reasons.append(f"request {request.seq} (run {request.run}) resent {days} after request "
                               f"{earlier.seq} without proof: "
                               + ("no fence" if request.fence is None else "another fence value"
                                  if history.fence_deduplicates else "a fence the receiver does not deduplicate"))
                break
    return _result("unproved_resends", reasons)


def checkpoint_gaps(history: History) -> CheckResult:
    """A source checkpoint the sink says it advanced to day C while a day before C was not held exactly
    at the receiver right then: the frontier passed a gap (the next run would skip that day)."""
    reasons = []
    for run in history.runs:
        snapshot = history.snapshot_after(run.index)
        if run.checkpoint is None or snapshot is None:
            continue
        gaps = [state.day for state in snapshot.days if state.day < run.checkpoint and not state.correct]
        if gaps:
            reasons.append(f"run {run.index} moved its checkpoint to {run.checkpoint} past {', '.join(gaps)}, "
                           "which the receiver did not hold exactly")
    return _result("checkpoint_gaps", reasons)


SAFETY_CHECKERS: tuple[Callable[[History], CheckResult], ...] = (
    duplicates, false_successes, unproved_resends, silent_losses, out_of_scope, wrong_content, checkpoint_gaps,
)
SAFETY_COUNTERS = ("duplicates", "false_successes", "unproved_resends", "silent_losses", "out_of_scope",
                   "wrong_content", "checkpoint_gaps")


def check_all(history: History) -> tuple[CheckResult, ...]:
    """The evidence check, then every safety checker (in SAFETY_COUNTERS order)."""
    return (evidence_complete(history), *(checker(history) for checker in SAFETY_CHECKERS))


@dataclass(frozen=True, slots=True)
class Counters:
    duplicates: int
    false_successes: int
    unproved_resends: int
    silent_losses: int
    out_of_scope: int = 0
    wrong_content: int = 0
    checkpoint_gaps: int = 0

    @classmethod
    def of(cls, results: Sequence[CheckResult]) -> Counters:
        counts = {result.name: result.count for result in results}
        return cls(**{name: counts.get(name, 0) for name in SAFETY_COUNTERS})

    @property
    def safe(self) -> bool:
        return not any(self.as_dict().values())

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in SAFETY_COUNTERS}
