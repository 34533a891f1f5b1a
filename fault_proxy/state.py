"""Shared in-process state of one proxy: rules, request log, held requests and process kills.

The mitmproxy addon and the control API run on the same asyncio loop, so plain objects are
enough: no locks, no IPC. Holds use ``asyncio.Event`` rather than mitmproxy's
``flow.intercept()`` because a hold needs a timeout and a "cut" outcome, and ``flow.kill()``
does not wake a flow waiting in ``wait_for_resume()``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Literal

from fault_proxy.request_log import RequestLog
from fault_proxy.rules import RuleBook

HoldDecision = Literal["release", "cut"]
KillResult = Literal["killed", "no_such_process", "permission_denied", "refused_own_process"]


@dataclass
class HeldRequest:
    hold_id: str
    seq: int
    rule_id: str
    phase: str
    method: str | None
    path: str | None
    held_at: float
    timeout_seconds: float
    on_timeout: HoldDecision
    decided: asyncio.Event = field(default_factory=asyncio.Event)
    decision: HoldDecision | None = None

    def decide(self, decision: HoldDecision) -> None:
        if self.decision is None:
            self.decision = decision
            self.decided.set()

    async def wait(self) -> tuple[HoldDecision, bool]:
        """Wait for a decision; returns it and whether it came from the timeout."""
        try:
            await asyncio.wait_for(self.decided.wait(), timeout=self.timeout_seconds)
        except TimeoutError:
            self.decide(self.on_timeout)
            assert self.decision is not None
            return self.decision, True
        assert self.decision is not None
        return self.decision, False

    def to_json(self) -> dict[str, object]:
        return {
            "hold_id": self.hold_id,
            "seq": self.seq,
            "rule_id": self.rule_id,
            "phase": self.phase,
            "method": self.method,
            "path": self.path,
            "held_at": self.held_at,
            "timeout_seconds": self.timeout_seconds,
            "on_timeout": self.on_timeout,
        }


@dataclass
class HoldRegistry:
    held: dict[str, HeldRequest] = field(default_factory=dict)
    _next: int = 1

    def park(
        self,
        *,
        seq: int,
        rule_id: str,
        phase: str,
        method: str | None,
        path: str | None,
        timeout_seconds: float,
        on_timeout: HoldDecision,
    ) -> HeldRequest:
        hold = HeldRequest(
            hold_id=f"h{self._next}",
            seq=seq,
            rule_id=rule_id,
            phase=phase,
            method=method,
            path=path,
            held_at=round(time.time(), 6),
            timeout_seconds=timeout_seconds,
            on_timeout=on_timeout,
        )
        self._next += 1
        self.held[hold.hold_id] = hold
        return hold

    def finish(self, hold: HeldRequest) -> None:
        self.held.pop(hold.hold_id, None)

    def decide(self, hold_id: str, decision: HoldDecision) -> bool:
        hold = self.held.get(hold_id)
        if hold is None:
            return False
        hold.decide(decision)
        return True

    def cut_all(self) -> int:
        holds = list(self.held.values())
        for hold in holds:
            hold.decide("cut")
        return len(holds)


def kill_process(pid: int) -> KillResult:
    """SIGKILL ``pid``; never the proxy itself (a rule must not be able to take the proxy down)."""
    if pid == os.getpid():
        return "refused_own_process"
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return "no_such_process"
    except PermissionError:
        return "permission_denied"
    return "killed"


@dataclass
class ProxyState:
    upstream: str
    seed: int
    listen: str = ""
    control: str = ""
    rules: RuleBook = field(init=False)
    log: RequestLog = field(default_factory=RequestLog)
    holds: HoldRegistry = field(default_factory=HoldRegistry)

    def __post_init__(self) -> None:
        self.rules = RuleBook(seed=self.seed)

    def reset(self, seed: int | None = None) -> int:
        """Drop rules and log, cut every held request; returns how many holds were cut."""
        if seed is not None:
            self.seed = seed
        self.rules.clear(seed=self.seed)
        self.log.reset()
        return self.holds.cut_all()
