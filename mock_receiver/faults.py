"""Fault rule selection: which configured behaviours fire for one request.

Counters live in memory (they restart with the process and on a behaviour
switch or reset); probability draws are derived from (seed, rule, match
ordinal) so a run is reproducible regardless of timing.
"""

from __future__ import annotations

import email.utils
import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mock_receiver.behaviour import (
    Behaviour,
    DelayAction,
    Endpoint,
    FaultRule,
    JobFailureAction,
    MiscountAction,
    RejectRowsAction,
    StatusAction,
)


@dataclass
class RuleCounter:
    matched: int = 0
    fired: int = 0


@dataclass
class Decision:
    """The actions selected for one request (at most one of each kind, first rule wins)."""

    status: StatusAction | None = None
    delay: DelayAction | None = None
    reject_rows: RejectRowsAction | None = None
    miscount: MiscountAction | None = None
    job_failure: bool = False
    rules: list[str] = field(default_factory=list)

    @property
    def rule_names(self) -> str | None:
        return ",".join(self.rules) or None


def _fires(rule: FaultRule, ordinal: int, counter: RuleCounter) -> bool:
    trigger = rule.when
    if trigger.max_fires is not None and counter.fired >= trigger.max_fires:
        return False
    if trigger.always:
        return True
    if trigger.nth is not None:
        return ordinal in trigger.nth
    if trigger.every is not None:
        return ordinal % trigger.every == 0
    assert trigger.probability is not None
    draw = random.Random(f"{trigger.seed}:{rule.name}:{ordinal}").random()
    return draw < trigger.probability


class FaultBook:
    def __init__(self) -> None:
        self.counters: dict[str, RuleCounter] = {}

    def reset(self) -> None:
        self.counters.clear()

    def decide(self, behaviour: Behaviour, endpoint: Endpoint, method: str, resource: str | None) -> Decision:
        decision = Decision()
        for rule in behaviour.rules:
            match = rule.match
            if endpoint not in match.endpoints:
                continue
            if match.resource is not None and match.resource != resource:
                continue
            if match.methods is not None and method not in match.methods:
                continue
            counter = self.counters.setdefault(rule.name, RuleCounter())
            counter.matched += 1
            if not _fires(rule, counter.matched, counter):
                continue
            if _assign(decision, rule):
                counter.fired += 1
                decision.rules.append(rule.name)
        return decision


def _assign(decision: Decision, rule: FaultRule) -> bool:
    action = rule.action
    if isinstance(action, StatusAction) and decision.status is None:
        decision.status = action
    elif isinstance(action, DelayAction) and decision.delay is None:
        decision.delay = action
    elif isinstance(action, RejectRowsAction) and decision.reject_rows is None:
        decision.reject_rows = action
    elif isinstance(action, MiscountAction) and decision.miscount is None:
        decision.miscount = action
    elif isinstance(action, JobFailureAction) and not decision.job_failure:
        decision.job_failure = True
    else:
        return False
    return True


def retry_after_value(action: StatusAction, now: float) -> str | None:
    if action.retry_after is None:
        return None
    if action.retry_after.format == "delta_seconds":
        return str(action.retry_after.seconds)
    # Rounded up: an HTTP-date has whole seconds and must not permit an earlier retry.
    moment = datetime.fromtimestamp(math.ceil(now + action.retry_after.seconds), tz=UTC)
    return email.utils.format_datetime(moment, usegmt=True)


def rejected_by_action(action: RejectRowsAction | None, index: int) -> bool:
    if action is None:
        return False
    if action.every_nth_row is not None:
        return (index + 1) % action.every_nth_row == 0
    assert action.fraction is not None
    return random.Random(f"{action.seed}:{index}").random() < action.fraction
