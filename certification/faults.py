"""One object per fault type: arm it, let it act, tell whether it fired, disarm it.

A row's fault acts on the certified sink or the row is not evidence: each object reports from the
harness's own witnesses (the proxy's log and rule counters, the receiver's request log, what the
harness itself did) whether it acted. A kill targets the sink process by identity: the pid the
harness hands the proxy belongs to its own child, which it does not reap while the kill rule is
armed (``Launched.before_reap`` disarms it), so the pid cannot have been reused by anyone.

A targeted fault acts on the first mutation request for one day of the scope (a stated day, or one
the seed picks): the wire tap marks the requests for that day (``certification.wiretap``) and the
proxy rule matches the mark, so the same seed gives the same fault whatever order a sink's
requests in flight reach the proxy, and whatever its batching.
"""

from __future__ import annotations

import copy
import hashlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from certification.history import FaultEvidence
from certification.http_framing import RawRequest
from certification.receiver_contract import ReceiverContract
from certification.scenarios import DayTarget, Fault, Row
from certification.services import Proxy, Receiver, ServiceUnavailable
from certification.sinks import Finished, Launched
from certification.tcp_service import TcpProxy
from certification.wire_reader import read_request
from certification.wiretap import Marker, WireTap
from sink.runtime.failpoints import ENV_VAR as FAILPOINT_ENV

KILLED = -9
MARK = "x-restproof-target"
RULE_ID = "row-fault"
RECEIVER_RULE = "row-rule"
HOLD_WAIT_S = 60.0
STALL_MAX_S = 20.0
"""The longest a connect partition (``connect_timeout``) lasts while the first run is alive."""
NO_FAILPOINTS = "the sink has no failpoints"
"""Why a crash-point fault cannot act on a sink that does not honour ``RESTPROOF_FAILPOINT``."""
TERMINAL_JOB_STATES = frozenset({"complete", "incomplete", "error", "cancelled"})


@dataclass
class FaultContext:
    row: Row
    proxy: Proxy
    receiver: Receiver | None
    seed: int
    target_day: str | None = None
    tap: WireTap | None = None
    tcp: TcpProxy | None = None


def target_day(row: Row, seed: int) -> str | None:
    """The day a targeted fault acts on: stated, or picked by the seed among days holding rows."""
    target = row.fault.target
    if isinstance(target, DayTarget):
        return target.day
    if target != "seeded" or row.dataset is None:
        return None
    days = row.dataset.days_with_rows() or row.dataset.universe
    pick = int(hashlib.sha256(f"{seed}/{row.row_id}".encode()).hexdigest(), 16) % len(days)
    return days[pick]


def day_marker(day: str, contract: ReceiverContract) -> Marker:
    def decide(request: RawRequest) -> bool | None:
        facts = read_request(request, contract)
        if not facts.mutation:
            return False
        if facts.targets is None:
            return None if not request.body_complete else False
        return day in facts.targets

    return decide


class RowFault:
    """No fault: nothing to arm, nothing that could fire."""

    kind = "none"

    def __init__(self, spec: Fault) -> None:
        self.spec = spec
        self.notes: list[str] = []

    def not_applicable(self, *, uses_journal: bool, failpoints: bool) -> str | None:
        """Why this fault cannot act on a sink like this one (the row is N/A for it), or None."""
        return None

    def journal_arguments(self, shared: Callable[[], tuple[str, ...]] | None) -> tuple[str, ...]:
        """The ``--journal`` arguments of a journal-using sink: the run's own journal (``shared``
        makes one database per row-and-sink run), or nothing for the sink's embedded default."""
        return shared() if shared is not None else ()

    def arm(self, ctx: FaultContext, first: Launched) -> None:
        """Before the first run leaves the launcher."""

    def during_first_run(self, ctx: FaultContext, first: Launched) -> None:
        """After ``go``, before the harness waits for the first run."""

    def before_first_reap(self, ctx: FaultContext) -> None:
        """The first run has exited and is not reaped yet: disarm what names its pid."""

    def environment(self, finishes: Sequence[Finished]) -> Mapping[str, str]:
        """Extra environment of the next run (the reference sink's crash points)."""
        return {}

    def restore(self, ctx: FaultContext) -> None:
        """After the row: put back what arming changed outside the proxy (reset clears the proxy)."""

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        return FaultEvidence(self.kind, None, "no fault to fire", ctx.target_day)

    def _targeted(self, ctx: FaultContext, match: dict[str, Any]) -> dict[str, Any]:
        if ctx.target_day is None:
            return match
        names = [*match.get("headers_present", ()), MARK]
        return {**match, "headers_present": names}


def _fired_entries(log: Sequence[Mapping[str, Any]], rule_id: str) -> list[Mapping[str, Any]]:
    return [entry for entry in log
            if any(isinstance(note, dict) and note.get("rule_id") == rule_id for note in entry.get("faults") or ())]


def _details(entry: Mapping[str, Any], action: str) -> list[Mapping[str, Any]]:
    """The details of an entry's fault notes of one action (the proxy's log: kill, hold ...)."""
    return [note["detail"] for note in entry.get("faults") or ()
            if isinstance(note, dict) and note.get("action") == action and isinstance(note.get("detail"), dict)]


class ProxyRuleFault(RowFault):
    kind = "proxy"

    def arm(self, ctx: FaultContext, first: Launched) -> None:
        rule = copy.deepcopy(self.spec.rule or {})
        rule["id"] = RULE_ID
        if ctx.target_day is not None:
            rule["match"] = self._targeted(ctx, dict(rule.get("match") or {}))
        ctx.proxy.add_rule(rule)

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        fired = len(_fired_entries(log, RULE_ID))
        return FaultEvidence(self.kind, fired > 0, f"the proxy rule fired {fired} time(s)", ctx.target_day)


class ProxyKillFault(RowFault):
    kind = "proxy_kill"

    @property
    def kill_phase(self) -> str | None:
        return self.spec.phase

    def arm(self, ctx: FaultContext, first: Launched) -> None:
        self.pid = first.pid
        ctx.proxy.add_rule({"id": RULE_ID, "match": self._targeted(ctx, {"method": "POST"}), "fire": "once",
                            "fault": {"action": "kill", "phase": self.kill_phase, "pid": first.pid}})

    def before_first_reap(self, ctx: FaultContext) -> None:
        try:
            ctx.proxy.delete_rule(RULE_ID)
        except ServiceUnavailable:  # already gone; a dead proxy shows in the row's evidence anyway
            self.notes.append("the kill rule could not be removed")

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        killed = [detail for entry in _fired_entries(log, RULE_ID) for detail in _details(entry, "kill")
                  if detail.get("result") == "killed" and detail.get("pid") == getattr(self, "pid", None)]
        first = finishes[0] if finishes else None
        fired = bool(killed) and first is not None and first.exit_code == KILLED and not first.timed_out
        detail = f"the proxy killed the first run at {self.kill_phase}" if fired else \
            f"no kill at {self.kill_phase} of the first run" + (": it hung" if first and first.timed_out else "")
        return FaultEvidence(self.kind, fired, detail, ctx.target_day)


class HoldKillReleaseFault(RowFault):
    kind = "hold_kill_release"

    def arm(self, ctx: FaultContext, first: Launched) -> None:
        ctx.proxy.add_rule({"id": RULE_ID, "match": self._targeted(ctx, {"method": "POST"}), "fire": "once",
                            "fault": {"action": "hold", "phase": "request", "timeout_seconds": 30,
                                      "on_timeout": "release"}})
        self.killed_while_held = False

    def during_first_run(self, ctx: FaultContext, first: Launched) -> None:
        deadline = time.monotonic() + HOLD_WAIT_S
        held: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not first.exited():
            held = ctx.proxy.held()
            if held:
                break
            time.sleep(0.02)
        if not held:
            return
        first.kill()  # the worker dies with its request in flight ...
        while not first.exited():
            time.sleep(0.01)
        self.killed_while_held = True
        _until_the_tap_passed_the_close(ctx.tap)
        for hold in held:
            ctx.proxy.release(str(hold["hold_id"]))  # ... and the request reaches the receiver after all
        time.sleep(0.3)

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        if not getattr(self, "killed_while_held", False):
            return FaultEvidence(self.kind, False, "no request was held before the first run ended", ctx.target_day)
        # The fault is the held bytes reaching the receiver after their worker died: the proxy's log
        # must show the released request forwarded, or the row tested a plain kill.
        delivered = [entry for entry in _fired_entries(log, RULE_ID) if entry.get("forwarded") == "yes"
                     and any(detail.get("decision") == "release" for detail in _details(entry, "hold"))]
        if not delivered:
            return FaultEvidence(self.kind, False, "the first run was killed with its request held, but the "
                                 "released request never reached the receiver", ctx.target_day)
        return FaultEvidence(self.kind, True, "the first run was killed with its request held, then released "
                             "to the receiver", ctx.target_day)


def _until_the_tap_passed_the_close(tap: WireTap | None) -> None:
    """The dead worker's connections end at the wire tap, which then closes its side towards the
    proxy. Released before the proxy reads that close, a held request would be forwarded as a live
    client's, and dropped when the close arrives: the bytes would never reach the receiver."""
    if tap is not None:
        tap.until_clients_left()


class FailpointFault(RowFault):
    kind = "failpoint"

    def not_applicable(self, *, uses_journal: bool, failpoints: bool) -> str | None:
        return None if failpoints else NO_FAILPOINTS

    def environment(self, finishes: Sequence[Finished]) -> Mapping[str, str]:
        # Armed until a run dies on it: an async child meets its verification points only in the
        # run that finds its job done, not in the first one.
        if all(finish.exit_code != KILLED for finish in finishes):
            return {FAILPOINT_ENV: str(self.spec.point)}
        return {}

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        killed = [index + 1 for index, finish in enumerate(finishes)
                  if finish.exit_code == KILLED and not finish.timed_out]
        return FaultEvidence(self.kind, bool(killed), f"run {killed[0]} died at {self.spec.point}" if killed
                             else f"no run died at {self.spec.point}: the crash point was never reached")


class ConnectTimeoutFault(RowFault):
    """The first run's connects never complete: the wire tap stops accepting and fills its listen queue,
    so the kernel drops the sink's SYNs on the very address its binding names. The partition lasts
    until the first run ends, or ``STALL_MAX_S`` at most (far beyond any sink's connect timeout; a
    sink without one, like the baselines, would otherwise hang to the run's time limit); recovery
    runs connect again."""

    kind = "connect_timeout"

    def arm(self, ctx: FaultContext, first: Launched) -> None:
        assert ctx.tap is not None
        ctx.tap.stall()
        self.seen = False
        self._resume_lock = threading.Lock()
        self._resumed = False

    def during_first_run(self, ctx: FaultContext, first: Launched) -> None:
        tap = ctx.tap
        assert tap is not None

        def watch() -> None:
            deadline = time.monotonic() + STALL_MAX_S
            while not first.exited() and time.monotonic() < deadline:
                self.seen = self.seen or tap.connect_hanging()
                time.sleep(0.02)
            self.restore(ctx)

        self.thread = threading.Thread(target=watch, daemon=True)
        self.thread.start()

    def before_first_reap(self, ctx: FaultContext) -> None:
        if hasattr(self, "thread"):
            self.thread.join(timeout=STALL_MAX_S + 10)
        self.restore(ctx)

    def restore(self, ctx: FaultContext) -> None:
        if ctx.tap is None or not hasattr(self, "seen"):
            return
        with self._resume_lock:  # the watcher and the reaper may both end the partition
            if not self._resumed:
                ctx.tap.resume()
                self._resumed = True

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        seen = getattr(self, "seen", False)
        return FaultEvidence(self.kind, seen, "the first run's connect hung in SYN_SENT" if seen
                             else "the first run never tried to connect")
