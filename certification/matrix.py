"""Run the remote-effect fault matrix: every row, every sink, judged by the checkers.

Per family one receiver and one fault proxy run as processes for the whole matrix; each row
resets both, arms its fault, runs the sink (held at the launcher until the fault is armed), then
drives recovery the way an orchestrator and an operator would: the ``recover`` command as another
host (fresh process, own worker id and working directory, only the state directory shared) while
the last run did not succeed, and the sink's ``operator`` command for every child it reports
blocked with an unknown effect. The history (proxy log, receiver ledger, the sink's reports) is
then checked. Nothing the sink says about itself can make a row pass: the receiver's ledger and
the proxy's log are the judges.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from certification.checkers import Counters, check
from certification.exercise import KILLED, exercise_problems
from certification.history import History, SinkReport
from certification.netns import NAMESPACE_MODE, PROCESS_MODE, HostNamespace, host_namespace, relay
from certification.observe import build_history, unit_name
from certification.scenarios import Row
from certification.services import Proxy, Receiver, RuleRefused, proxy_process, receiver_process
from certification.sinks import Finished, Invocation, Launched, SinkSpec, blocked_children, default_values, render
from certification.sinks import unit_outcomes as parse_outcomes

MAX_RECOVERIES = 2
LEASE_WAIT_S = 1.2
"""The reference sink runs with 1 s leases in the matrix; a recovering host waits them out."""
SETTLE_CLOCK_S = 3600
"""Advancing the receiver clock by an hour settles its "30-minute" async jobs (receipts live a day):
what an operator does by waiting before reconciling, and what settles jobs a naive sink left."""


@dataclass(frozen=True, slots=True)
class SinkRowResult:
    sink: str
    verdict: str
    """PASS / FAIL for the certified sinks; CAUGHT / NOT_CAUGHT / OBSERVED for baselines; N/A; UNVERIFIED
    (ground truth unreadable: a live receiver)."""
    counters: Counters | None
    exit_codes: tuple[int, ...]
    history_digest: str | None
    seconds: float
    reasons: tuple[str, ...] = ()
    history: History | None = None


UNVERIFIED_REASON = "the receiver's ground truth cannot be read (a live receiver without a ledger API): never PASS"


@dataclass
class Family:
    receiver: Receiver | None
    """None: a live receiver whose ground truth the harness cannot read; its rows are UNVERIFIED."""
    proxy: Proxy
    bindings_dir: Path
    bundle_dir: Path
    bundle: dict[str, Any]
    namespace: HostNamespace | None = None
    """Where the restarted hosts run (None: fresh processes in the harness's own network)."""


@contextmanager
def family_services(row: Row, work: Path, seed: int, receiver_url: str | None = None,
                    isolation: str = PROCESS_MODE) -> Iterator[Family]:
    """Receiver + proxy for one catalog, a binding re-pointed at the proxy, the exported bundle.
    With ``receiver_url`` (a live receiver) no receiver is started: the proxy forwards there. With
    ``isolation`` NAMESPACE_MODE the restarted hosts get a network namespace (certification.netns)."""
    from sink.bounded_yaml import load_bounded_yaml_file  # noqa: PLC0415

    with ExitStack() as stack:
        receiver: Receiver | None = None
        if receiver_url is None:
            receiver = stack.enter_context(receiver_process(row.receiver, work / "receiver"))
        upstream = receiver.data_url if receiver is not None else str(receiver_url)
        namespace = stack.enter_context(host_namespace()) if isolation == NAMESPACE_MODE else None
        also = () if namespace is None else (f"{namespace.host_address}:0",)
        proxy = stack.enter_context(proxy_process(upstream, work / "proxy", seed, also))
        if namespace is not None:
            port = int(proxy.url.rsplit(":", 1)[1])
            stack.enter_context(relay(namespace, port, int(proxy.also[0].rsplit(":", 1)[1])))
        bindings = work / "bindings"
        bindings.mkdir(parents=True, exist_ok=True)
        source = row.workload.parent.parent / "bindings" / f"{row.binding}.yaml"
        document = load_bounded_yaml_file(source)
        document["authority"] = proxy.url
        import yaml  # noqa: PLC0415

        (bindings / f"{row.binding}.yaml").write_text(yaml.safe_dump(document, sort_keys=True))
        bundle_dir = work / "bundle"
        values = default_values()
        subprocess.run(
            [values["delivery"], "bundle", str(row.workload), "--scope-from", row.scope_from, "--scope-to",
             row.scope_to, "--bindings-dir", str(bindings), "--out", str(bundle_dir)],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120,
        )
        bundle = json.loads((bundle_dir / "bundle.json").read_text())
        yield Family(receiver, proxy, bindings, bundle_dir, bundle, namespace)


def live_receiver_url(url: str) -> str:
    """A live receiver's base URL: an http(s) origin (ValueError otherwise: invalid input)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment \
            or parts.username or parts.password:
        raise ValueError("--receiver-url must be an http(s) URL without credentials, query or fragment")
    return url.rstrip("/")


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RESTPROOF_FAILPOINT"}
    env.setdefault("MOCK_RECEIVER_TOKEN", "restproof-certification-token")
    env.update(extra or {})
    return env


class RowRunner:
    def __init__(self, family: Family, row: Row, sink: SinkSpec, work: Path, seed: int) -> None:
        self.family, self.row, self.sink, self.work, self.seed = family, row, sink, work, seed
        self.values = {
            **default_values(), "workload": str(row.workload), "scope_from": row.scope_from,
            "scope_to": row.scope_to, "bindings_dir": str(family.bindings_dir), "state_dir": str(work / "state"),
            "bundle_dir": str(family.bundle_dir), "receiver_url": family.proxy.url,
        }
        self.unit_of = {(c["scope_from"], c["scope_to"]): unit_name(c["scope_from"], c["scope_to"])
                        for c in family.bundle["children"]}

    def _invocation(self, template: tuple[str, ...], host: int, *, armed: bool = False, **extra: str) -> Invocation:
        values = {**self.values, "worker_id": f"{self.sink.name}-host{host}", **extra}
        env = _env({"RESTPROOF_FAILPOINT": self.row.fault.point} if armed and self.row.fault.point else None)
        namespace = self.family.namespace
        prefix = namespace.prefix() if namespace is not None and host > 1 else ()  # another host, another address
        return Invocation((*prefix, *render(template, values)), self.work / f"host{host}", env)

    def _first_run(self) -> Finished:
        fault, proxy = self.row.fault, self.family.proxy
        launched = Launched(self._invocation(self.sink.run, 1, armed=True))
        if fault.type == "proxy" and fault.rule is not None:
            try:
                proxy.add_rule(fault.rule)
            except RuleRefused as exc:
                launched.process.kill()  # never started: still held at the launcher
                launched.wait()
                raise RuleRefused(f"row {self.row.row_id}: {exc}") from None
        elif fault.type == "proxy_kill":
            proxy.add_rule({"match": {"method": "POST"}, "fire": "once",
                            "fault": {"action": "kill", "phase": fault.phase, "pid": launched.pid}})
        elif fault.type == "hold_kill_release":
            proxy.add_rule({"match": {"method": "POST"}, "fire": "once",
                            "fault": {"action": "hold", "phase": "request", "timeout_seconds": 30,
                                      "on_timeout": "release"}})
        launched.go()
        if fault.type == "hold_kill_release":
            held = _wait_for(proxy.held, timeout=60)
            os.kill(launched.pid, signal.SIGKILL)  # the worker dies with its request in flight
            finished = launched.wait()
            for hold in held:
                proxy.release(str(hold["hold_id"]))  # ... and the request reaches the receiver after all
            time.sleep(0.3)
            return finished
        return launched.wait()

    def run(self) -> SinkRowResult:
        started = time.monotonic()
        if self.row.fault.type == "failpoint" and not self.sink.failpoints:
            return SinkRowResult(self.sink.name, "N/A", None, (), None, 0.0, ("the sink has no failpoints",))
        receiver = self.family.receiver
        if receiver is not None:
            receiver.reset()
        self.family.proxy.reset(self.seed)
        finishes = [self._first_run()]
        host = 2
        for _ in range(MAX_RECOVERIES):
            if finishes[-1].exit_code == 0 or self.sink.recover is None:
                break
            time.sleep(LEASE_WAIT_S)
            # A crash point stays armed until a run dies on it: an async child reaches its
            # verification points only in the run that finds its job done, not in the first one.
            armed = self.row.fault.type == "failpoint" and all(f.exit_code != KILLED for f in finishes)
            finishes.append(Launched(self._invocation(self.sink.recover, host, armed=armed)).go_and_wait())
            host += 1
        if finishes[-1].exit_code == 4 and self.sink.operator is not None:
            if receiver is not None:
                receiver.advance_clock(SETTLE_CLOCK_S)  # the operator waits for the receiver
            for child in blocked_children(finishes[-1].stdout):
                Launched(self._invocation(self.sink.operator, host, operation_id=child)).go_and_wait()
            if self.sink.recover is not None:
                finishes.append(Launched(self._invocation(self.sink.recover, host + 1)).go_and_wait())
        reports = tuple(SinkReport(f.exit_code, parse_outcomes(self.sink, f.stdout, self.unit_of)) for f in finishes)
        exit_codes = tuple(f.exit_code for f in finishes)
        if receiver is None:  # the proxy's log alone cannot show what was applied: no verdict
            history = build_history(self.row.row_id, self.family.bundle, self.family.proxy.log(),
                                    receiver_requests=(), receiver_effects=(), reports=reports,
                                    fenced_receiver=self.row.fenced_receiver)
            return SinkRowResult(self.sink.name, "UNVERIFIED", None, exit_codes, history.digest(),
                                 time.monotonic() - started, (UNVERIFIED_REASON,), history)
        receiver.advance_clock(SETTLE_CLOCK_S)  # settle async jobs the sink left running
        history = build_history(
            self.row.row_id, self.family.bundle, self.family.proxy.log(),
            receiver_requests=receiver.requests(), receiver_effects=receiver.effects(),
            reports=reports, fenced_receiver=self.row.fenced_receiver,
        )
        counters = check(history)
        verdict, reasons = self._verdict(history, counters)
        return SinkRowResult(self.sink.name, verdict, counters, exit_codes, history.digest(),
                             time.monotonic() - started, reasons, history)

    def _verdict(self, history: History, counters: Counters) -> tuple[str, tuple[str, ...]]:
        if self.sink.name.startswith("naive"):
            expected = self.sink.name in self.row.naive_duplicates
            if expected:
                return ("CAUGHT", ()) if counters.duplicates > 0 else (
                    "NOT_CAUGHT", ("a baseline that must duplicate here did not: the fault was not real",))
            return "OBSERVED", ()
        reasons = [f"{name} = {value}" for name, value in counters.as_dict().items() if value]
        reasons.extend(exercise_problems(self.row.fault.type, tuple(report.exit_code for report in history.reports)))
        if self.row.expect.reference == "completed":
            applied = {effect.unit for effect in history.effects}
            if history.reports[-1].exit_code != 0:
                reasons.append(f"expected completed, final exit {history.reports[-1].exit_code}")
            if applied != set(history.expected_units):
                reasons.append("expected every unit applied")
        return ("PASS" if not reasons else "FAIL"), tuple(reasons)


def _wait_for(probe: Callable[[], list[dict[str, Any]]], timeout: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.02)
    return []
