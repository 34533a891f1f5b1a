"""Faults the receiver itself produces: a behaviour rule for the row (a failed job, a partial batch,
contradictory counts), an async job cancelled from outside or outlived by its receipt, and the
receiver dying after it committed, before it answered (restarted on its durable ledger). See
``certification.faults`` for the contract every fault object meets.
"""

from __future__ import annotations

import abc
import copy
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from certification.faults import (
    HOLD_WAIT_S,
    RECEIVER_RULE,
    TERMINAL_JOB_STATES,
    FaultContext,
    ProxyKillFault,
    RowFault,
)
from certification.history import FaultEvidence
from certification.services import Receiver, RuleRefused
from certification.sinks import Finished, Launched


class _ChangesBehaviour(RowFault):
    """A fault that changes the receiver's behaviour for the row, and puts the original back after it."""

    def _behaviour_to_change(self, receiver: Receiver) -> dict[str, Any]:
        """A copy of the receiver's behaviour to change; the original is kept for ``restore``."""
        self.original = receiver.behaviour()
        return copy.deepcopy(self.original)

    def restore(self, ctx: FaultContext) -> None:
        if ctx.receiver is not None and hasattr(self, "original"):
            ctx.receiver.put_behaviour(self.original)


class ReceiverRuleFault(_ChangesBehaviour):
    """A receiver-side outcome: a behaviour rule (a failed job, a partial batch, a synthetic status)."""

    kind = "receiver_rule"

    def arm(self, ctx: FaultContext, first: Launched) -> None:
        assert ctx.receiver is not None
        changed = self._behaviour_to_change(ctx.receiver)
        changed["rules"] = [*changed.get("rules", []), {**(self.spec.rule or {}), "name": RECEIVER_RULE}]
        ctx.receiver.put_behaviour(changed)

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        requests = [] if ctx.receiver is None else ctx.receiver.requests()
        fired = sum(1 for request in requests if RECEIVER_RULE in str(request.get("rule") or "").split(","))
        return FaultEvidence(self.kind, fired > 0, f"the receiver's rule fired on {fired} request(s)")


@dataclass
class _JobWatcher:
    """Acts once on the first async job the receiver accepts during the first run."""

    act: Callable[[Receiver, dict[str, Any]], bool]
    acted: bool = False
    stop: threading.Event = field(default_factory=threading.Event)

    def watch(self, receiver: Receiver, first: Launched) -> None:
        while not self.stop.is_set() and not first.exited():
            jobs = [job for job in receiver.jobs() if job.get("state") not in TERMINAL_JOB_STATES]
            if jobs:
                self.acted = self.act(receiver, jobs[0])
                return
            time.sleep(0.02)


class _WatchedJobFault(RowFault, abc.ABC):
    done = ""
    def during_first_run(self, ctx: FaultContext, first: Launched) -> None:
        assert ctx.receiver is not None
        self.watcher = _JobWatcher(self._act)
        self.thread = threading.Thread(target=self.watcher.watch, args=(ctx.receiver, first), daemon=True)
        self.thread.start()

    def before_first_reap(self, ctx: FaultContext) -> None:
        if hasattr(self, "watcher"):
            self.watcher.stop.set()
            self.thread.join(timeout=30)

    @abc.abstractmethod
    def _act(self, receiver: Receiver, job: dict[str, Any]) -> bool:
        """Act on the accepted job; True when the action took."""

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        acted = hasattr(self, "watcher") and self.watcher.acted
        return FaultEvidence(self.kind, acted, self.done if acted else "no job was accepted during the first run")


class ExternalCancelFault(_WatchedJobFault):
    kind = "external_cancel"
    done = "the receiver's job was cancelled from outside while the sink waited for it"

    def _act(self, receiver: Receiver, job: dict[str, Any]) -> bool:
        return receiver.cancel_job(str(job["job_id"]))


class ReceiverClockFault(_WatchedJobFault):
    kind = "receiver_clock"
    done = "the receiver's clock jumped past the job's end once it was accepted"

    def _act(self, receiver: Receiver, job: dict[str, Any]) -> bool:
        for step in self.spec.advance_seconds or ():
            receiver.advance_clock(step)
            receiver.jobs()  # a read settles what became due before the next step
        return True


class ReceiverCrashFault(_ChangesBehaviour):
    """The receiver commits the first submit, then dies before answering (SIGKILL while a rule holds
    its answer back) and comes back on its durable ledger, same ports."""

    kind = "receiver_crash"

    def arm(self, ctx: FaultContext, first: Launched) -> None:
        assert ctx.receiver is not None
        endpoint = "sync_submit" if ctx.row.family == "sync_batch" else "async_submit"
        changed = self._behaviour_to_change(ctx.receiver)
        changed["rules"] = [*changed.get("rules", []), {
            "name": RECEIVER_RULE, "match": {"endpoints": [endpoint]}, "when": {"nth": [1]},
            "action": {"kind": "delay", "seconds": 30, "after_effect": True}}]
        ctx.receiver.put_behaviour(changed)
        self.crashed = False

    def during_first_run(self, ctx: FaultContext, first: Launched) -> None:
        receiver = ctx.receiver
        assert receiver is not None
        deadline = time.monotonic() + HOLD_WAIT_S
        while time.monotonic() < deadline and not first.exited():
            if any(RECEIVER_RULE in str(r.get("rule") or "").split(",") for r in receiver.requests()):
                receiver.crash_and_restart()  # committed, answer held back: the crash
                self.crashed = True
                return
            time.sleep(0.02)

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        crashed = getattr(self, "crashed", False)
        return FaultEvidence(self.kind, crashed, "the receiver died after committing, before answering, and "
                             "restarted on its ledger" if crashed else "no submit reached the receiver's rule")


LAPSE_MARGIN_S = 1.0
"""Real time waited beyond the key retention, so the receiver has forgotten the key on any rounding."""


class RetentionLapseFault(_ChangesBehaviour, ProxyKillFault):
    """The receiver keeps a fence key ``retention_seconds``; the first run is killed once the receiver
    has committed its first mutation (the answer never reaches the sink), then real time passes beyond
    that retention before the next run, on every clock (the sink's journal and the receiver alike).
    A same-key resend is now a new request to the receiver, applied again: the sink must not resend
    past its certified retention horizon."""

    kind = "retention_lapse"

    @property
    def kill_phase(self) -> str:
        return "response"

    def arm(self, ctx: FaultContext, first: Launched) -> None:
        assert ctx.receiver is not None and self.spec.retention_seconds is not None
        changed = self._behaviour_to_change(ctx.receiver)
        section = changed.get("sync" if ctx.row.family == "sync_batch" else "async_jobs") or {}
        fence = section.get("fence")
        if not isinstance(fence, dict):
            raise RuleRefused("a retention lapse needs a receiver fence that keeps keys")
        fence["retention_seconds"] = self.spec.retention_seconds  # what follows it is the personality's own
        ctx.receiver.put_behaviour(changed)
        super().arm(ctx, first)

    def before_first_reap(self, ctx: FaultContext) -> None:
        super().before_first_reap(ctx)
        assert self.spec.retention_seconds is not None
        self.lapsed_s = self.spec.retention_seconds + LAPSE_MARGIN_S
        time.sleep(self.lapsed_s)

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        killed = super().evidence(ctx, finishes, log)
        lapsed = killed.fired and hasattr(self, "lapsed_s")
        detail = killed.detail + (f", then {self.lapsed_s:g} s passed: the receiver's {self.spec.retention_seconds:g} s"
                                  " key retention lapsed before the next run" if lapsed else "")
        return FaultEvidence(self.kind, bool(lapsed), detail, killed.target_day)
