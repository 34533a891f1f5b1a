"""Fakes of the journal side of the limiter and of the clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from sink.compiler import compile_files, default_paths
from sink.contracts.plan import CompiledPlan
from sink.contracts.profile_policy import RateLimits
from sink.journal.rate_policy import BucketSpec, SlotRequest

LIMITS = RateLimits(submit_per_minute=30, poll_per_minute=90, max_active_requests=3, max_active_remote_jobs=1,
                    scope=("endpoint", "principal"))


@dataclass
class FakeStore:
    token_waits: list[int] = field(default_factory=list)
    slot_waits: list[int] = field(default_factory=list)
    events: list[tuple[str, object]] = field(default_factory=list)

    def take_rate_token(self, spec: BucketSpec) -> int:
        self.events.append((f"take:{spec.bucket}", spec))
        return self.token_waits.pop(0) if self.token_waits else 0

    def acquire_request_slot(self, request: SlotRequest) -> int:
        self.events.append(("slot", request))
        return self.slot_waits.pop(0) if self.slot_waits else 0

    def release_request_slot(self, scope: str, holder: str) -> None:
        self.events.append(("release", holder))


@dataclass
class StepClock:
    now: int = 0
    slept: list[int] = field(default_factory=list)

    def monotonic_ms(self) -> int:
        return self.now

    def sleep_ms(self, milliseconds: int) -> None:
        self.slept.append(milliseconds)
        self.now += milliseconds


@cache
def bundled_sync_plan() -> CompiledPlan:
    workload = Path(__file__).resolve().parents[2] / "scenarios" / "workloads" / "measurements-sync.yaml"
    return compile_files(default_paths(workload))
