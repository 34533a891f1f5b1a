"""Run one row of the remote-effect fault matrix for one sink, and judge it.

Per catalog (family) a lane runs one receiver, one fault proxy in front of it and the wire tap in
front of the proxy. Each row resets all three, arms its fault (``certification.faults``), runs the
sink (held at the launcher until the fault is armed), then drives recovery the way an orchestrator
and an operator would: the ``recover`` command as another host (fresh process, own worker id and
working directory, only the state directory shared) while the last run did not succeed, and the
sink's ``operator`` command for every child it reports blocked with an unknown effect. After every
run the harness reads the receiver's content; at the end it lets the receiver finish every job it
holds and reads it once more. The history (``certification.observe``) is then checked
(``certification.checkers``) and judged (``certification.verdicts``): nothing the sink says about
itself can make a row pass.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from certification.checkers import Counters, check_all
from certification.documents import load_yaml
from certification.exercise import exercised
from certification.fault_types import fault_of
from certification.faults import FaultContext, target_day
from certification.history import Completeness, History, Run, RunKind, Snapshot
from certification.netns import NAMESPACE_MODE, PROCESS_MODE, HostNamespace, host_namespace, relay
from certification.observe import RunWindow, effects_of, snapshot, tap_overflowed, wire_requests
from certification.scenarios import Row
from certification.services import (
    START_TIMEOUT_S,
    Proxy,
    Receiver,
    RuleRefused,
    ServiceUnavailable,
    proxy_process,
    receiver_process,
)
from certification.sinks import (
    RUN_TIMEOUT_S,
    Finished,
    Invocation,
    Launched,
    SinkSpec,
    blocked_children,
    bundled_sinks,
    checkpoint_claim,
    default_values,
    render,
    stated_codes,
)
from certification.sinks import unit_claims as parse_claims
from certification.tcp_service import TcpProxy, tcp_proxy_process
from certification.verdicts import NOT_APPLICABLE, UNVERIFIED, SinkRowResult, baseline_verdict, certified_verdict
from certification.wiretap import WireTap
from sink.runtime.failpoints import ACTION_ENV_VAR as FAILPOINT_ACTION_ENV
from sink.runtime.failpoints import ENV_VAR as FAILPOINT_ENV

MAX_RECOVERIES = 2
LEASE_WAIT_S = 1.2
"""The reference sink runs with 1 s leases in the matrix; a recovering host waits them out."""
SETTLE_CLOCK_S = 3600
"""Advancing the receiver clock by an hour settles its "30-minute" async jobs (receipts live a day):
what an operator does by waiting before reconciling, and what settles jobs a sink left running."""
IN_FLIGHT_SETTLE_S = 60.0
"""How long the judge waits for the receiver to finish the requests the sink left in flight: above
the longest in-progress hold of the bundled catalogs (34 s)."""
JournalArguments = Callable[[], tuple[str, ...]]
"""``certification.journal_backend``: the arguments pointing one run at a journal of its own."""
UNVERIFIED_REASON = "the receiver's ground truth cannot be read (a live receiver without a ledger API): never PASS"


@dataclass
class Family:
    receiver: Receiver | None
    """None: a live receiver whose ground truth the harness cannot read; its rows are UNVERIFIED."""
    proxy: Proxy
    tap: WireTap
    sink_url: str
    """Where sinks send: the wire tap, which relays to the proxy."""
    bindings_dir: Path
    bundle_dir: Path
    behaviour: dict[str, Any] | None
    """The personality's behaviour as loaded (rows that change it put it back)."""
    namespace: HostNamespace | None = None
    tcp: TcpProxy | None = None
    """The TCP fault proxy between the tap and the HTTP proxy (catalogs with TCP rows only)."""
    journal: JournalArguments | None = None
    """A fresh journal per row-and-sink run (``--journal DSN``); None: the sink's embedded SQLite journal."""


def _export_bundle(row: Row, bindings: Path, bundle_dir: Path, work: Path) -> None:
    """The reference sink's exact sealed requests, for sinks that replay them (``{bundle_dir}``). They
    are a convenience for baselines, never the judge's expectation. The export forks from the
    reference sink's warm server when it has one, like its runs."""
    import subprocess  # noqa: PLC0415

    reference = bundled_sinks()["reference"].warm_start
    argv = (default_values()["delivery"], "bundle", str(row.workload), "--scope-from", row.scope_from, "--scope-to",
            row.scope_to, "--bindings-dir", str(bindings), "--out", str(bundle_dir))
    finished = Launched(Invocation(argv, work, dict(os.environ), reference.entry_of() if reference else None)
                        ).go_and_wait(120)
    if finished.exit_code != 0:
        raise subprocess.CalledProcessError(finished.exit_code, argv[:2])


@contextmanager
def family_services(row: Row, work: Path, seed: int, receiver_url: str | None = None,
                    isolation: str = PROCESS_MODE, *, start_timeout: float = START_TIMEOUT_S,
                    journal: JournalArguments | None = None) -> Iterator[Family]:
    """Receiver + proxy + tap for one catalog, a binding re-pointed at the tap, the exported bundle.
    With ``receiver_url`` (a live receiver) no receiver is started: the proxy forwards there. With
    ``isolation`` NAMESPACE_MODE the restarted hosts get a network namespace (certification.netns).
    ``start_timeout`` bounds each server's start-up (ServiceUnavailable after it)."""
    with ExitStack() as stack:
        receiver: Receiver | None = None
        if receiver_url is None:
            receiver = stack.enter_context(receiver_process(row.receiver, work / "receiver",
                                                            start_timeout=start_timeout))
        upstream = receiver.data_url if receiver is not None else str(receiver_url)
        proxy = stack.enter_context(proxy_process(upstream, work / "proxy", seed, start_timeout=start_timeout))
        proxy_address = urlsplit(proxy.url)
        next_hop = (str(proxy_address.hostname), int(proxy_address.port or 80))
        tcp = (stack.enter_context(tcp_proxy_process(next_hop, seed, start_timeout=start_timeout))
               if row.catalog_uses_tcp else None)
        namespace = stack.enter_context(host_namespace()) if isolation == NAMESPACE_MODE else None
        listen = [("127.0.0.1", 0)] + ([] if namespace is None else [(namespace.host_address, 0)])
        tap = WireTap(tcp.listen if tcp is not None else next_hop, listen)
        tap.start()
        stack.callback(tap.stop)
        sink_url = f"http://{tap.addresses[0][0]}:{tap.addresses[0][1]}"
        if namespace is not None:
            stack.enter_context(relay(namespace, tap.addresses[0][1], tap.addresses[1][1]))
        bindings = work / "bindings"
        bindings.mkdir(parents=True, exist_ok=True)
        document = load_yaml(row.workload.parent.parent / "bindings" / f"{row.binding}.yaml")
        document["authority"] = sink_url
        (bindings / f"{row.binding}.yaml").write_text(yaml.safe_dump(document, sort_keys=True))
        bundle_dir = work / "bundle"
        _export_bundle(row, bindings, bundle_dir, work / "export")
        behaviour = None if receiver is None else receiver.behaviour()
        yield Family(receiver, proxy, tap, sink_url, bindings, bundle_dir, behaviour, namespace, tcp, journal)


def live_receiver_url(url: str) -> str:
    """A live receiver's base URL: an http(s) origin (ValueError otherwise: invalid input)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment \
            or parts.username or parts.password:
        raise ValueError("--receiver-url must be an http(s) URL without credentials, query or fragment")
    return url.rstrip("/")


def _env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (FAILPOINT_ENV, FAILPOINT_ACTION_ENV)}
    env.setdefault("MOCK_RECEIVER_TOKEN", "restproof-certification-token")
    env.update(extra)
    return env


class RowRunner:
    def __init__(self, family: Family, row: Row, sink: SinkSpec, work: Path, seed: int, *, role: str,
                 run_timeout: float = RUN_TIMEOUT_S) -> None:
        self.family, self.row, self.sink, self.work, self.seed, self.role = family, row, sink, work, seed, role
        self.run_timeout = run_timeout
        self.values = {
            **default_values(), "workload": str(row.workload), "scope_from": row.scope_from,
            "scope_to": row.scope_to, "bindings_dir": str(family.bindings_dir), "state_dir": str(work / "state"),
            "bundle_dir": str(family.bundle_dir), "receiver_url": family.sink_url,
            "sink_dir": str(sink.base_dir or Path.cwd()),
        }
        self.fault = fault_of(row.fault)
        self.journal_args: tuple[str, ...] = ()
        """Set when the row starts (``run``): a fault may give the run a journal server of its own."""
        self.ctx = FaultContext(row, family.proxy, family.receiver, seed, target_day(row, seed), family.tap,
                                family.tcp)
        self.finishes: list[Finished] = []
        self.runs: list[Run] = []
        self.snapshots: list[Snapshot] = []

    def _invocation(self, template: tuple[str, ...], host: int, extra_env: Mapping[str, str], **extra: str
                    ) -> Invocation:
        values = {**self.values, "worker_id": f"{self.sink.name}-host{host}", **extra}
        namespace = self.family.namespace
        netns = namespace.name if namespace is not None and host > 1 else None  # another host, another address
        argv = render(template, values, {"journal_args": self.journal_args})
        warm = self.sink.warm_start.entry_of() if self.sink.warm_start is not None else None
        return Invocation(argv, self.work / f"host{host}", _env(extra_env), warm, netns)

    def _record(self, finished: Finished, kind: RunKind) -> None:
        # An operator command answers in its own format: it claims nothing about the delivery.
        claims, problem = parse_claims(self.sink, finished.stdout) if kind is not RunKind.OPERATOR else ({}, None)
        index = len(self.runs) + 1
        self.finishes.append(finished)
        checkpoint = checkpoint_claim(self.sink, finished.stdout) if kind is not RunKind.OPERATOR else None
        self.runs.append(Run(index, kind, finished.exit_code, finished.timed_out, finished.started_at,
                             finished.ended_at, claims, problem if finished.exit_code >= 0 else None, checkpoint,
                             stated_codes(self.sink, finished.stdout)))
        self._snapshot(index)

    def _snapshot(self, after_run: int) -> list[dict[str, Any]]:
        """The receiver's rows now, kept as a snapshot of the day states; the rows themselves are
        returned so the judge reads the final ledger once, not once per use."""
        receiver, dataset = self.family.receiver, self.row.dataset
        if receiver is None or dataset is None:
            return []
        rows = receiver.rows()
        self.snapshots.append(snapshot(after_run, rows, receiver.jobs(), dataset))
        return rows

    def _first_run(self) -> None:
        launched = Launched(self._invocation(self.sink.run, 1, self.fault.environment(())),
                            before_reap=lambda: self.fault.before_first_reap(self.ctx))
        try:
            self.fault.arm(self.ctx, launched)
        except BaseException as exc:
            launched.kill()  # never started: still held at the launcher
            launched.wait()
            if isinstance(exc, RuleRefused):  # the catalog's rule: name the row that holds it
                raise RuleRefused(f"row {self.row.row_id}: {exc}") from None
            raise
        launched.go()
        self.fault.during_first_run(self.ctx, launched)
        self._record(launched.wait(self.run_timeout), RunKind.FIRST)

    def _run(self, template: tuple[str, ...], host: int, kind: RunKind, **extra: str) -> Finished:
        finished = Launched(self._invocation(template, host, self.fault.environment(self.finishes), **extra)
                            ).go_and_wait(self.run_timeout)
        self._record(finished, kind)
        return finished

    def _drive(self) -> None:
        self._first_run()
        host = 2
        for _ in range(MAX_RECOVERIES):
            if self.finishes[-1].exit_code == 0 or self.sink.recover is None:
                break
            time.sleep(LEASE_WAIT_S)
            self._run(self.sink.recover, host, RunKind.RECOVERY)
            host += 1
        if self.finishes[-1].exit_code == 4 and self.sink.operator is not None:
            receiver = self.family.receiver
            if receiver is not None:
                receiver.advance_clock(SETTLE_CLOCK_S)  # the operator waits for the receiver
            for child in blocked_children(self.finishes[-1].stdout):
                self._run(self.sink.operator, host, RunKind.OPERATOR, operation_id=child)
            if self.sink.recover is not None:
                time.sleep(LEASE_WAIT_S)
                self._run(self.sink.recover, host + 1, RunKind.RECOVERY)

    def run(self, must_be_caught: bool) -> SinkRowResult:
        started = time.monotonic()
        not_applicable = self.fault.not_applicable(uses_journal=self.sink.uses_journal(),
                                                   failpoints=self.sink.failpoints)
        if not_applicable is not None:
            return SinkRowResult(self.sink.name, self.role, NOT_APPLICABLE, None, (), None, 0.0, (not_applicable,))
        family = self.family
        if family.receiver is not None:
            family.receiver.reset()
        family.proxy.reset(self.seed)
        if family.tcp is not None:
            family.tcp.reset()
        marker = None
        if self.ctx.target_day is not None and self.row.contract is not None:
            from certification.faults import day_marker  # noqa: PLC0415

            marker = day_marker(self.ctx.target_day, self.row.contract)
        family.tap.reset(marker)
        try:
            if self.sink.uses_journal():
                self.journal_args = self.fault.journal_arguments(family.journal)
            self._drive()
            return self._judge(started, must_be_caught)
        finally:
            self.fault.restore(self.ctx)

    def _settle(self) -> tuple[int, bool]:
        """Wait for the receiver to finish every request the sink left in flight (a request held in
        progress, a slow upload, one the proxy released after its client died): the ledger, the
        proxy's log and the tap are read after it. Returns the count still in flight and whether
        the receiver answered."""
        receiver = self.family.receiver
        if receiver is None:
            return 0, True
        try:
            if self.family.tcp is not None:
                # Bytes a toxic still holds never reach the receiver after this sink's row is judged:
                # in a later run they would be charged to the next sink on the lane.
                self.family.tcp.cut_connections()
            return receiver.settle(IN_FLIGHT_SETTLE_S), True
        except ServiceUnavailable:
            return 0, False

    def _judge(self, started: float, must_be_caught: bool) -> SinkRowResult:
        family, row = self.family, self.row
        in_flight, settled = self._settle()
        log, dropped = family.proxy.log_with_gaps()
        evidence = self.fault.evidence(self.ctx, self.finishes, log)
        windows = [RunWindow(run.index, run.started_at, run.ended_at) for run in self.runs]
        assert row.contract is not None and row.dataset is not None
        requests, unexplained = wire_requests(family.tap.connections(), log, row.contract, windows)
        exit_codes = tuple(run.exit_code for run in self.runs)
        receiver = family.receiver
        ledger_read = receiver is not None and settled
        effects: tuple[Any, ...] = ()
        if receiver is not None:
            try:
                receiver.advance_clock(SETTLE_CLOCK_S)  # settle every job the sink left
                final_rows = self._snapshot(0)
                effects = effects_of(receiver.effects(), final_rows, row.dataset.universe)
            except ServiceUnavailable:
                ledger_read = False
        fence = row.contract.sync_fence if row.family == "sync_batch" else row.contract.async_fence
        history = History(
            row_id=row.row_id, sink=self.sink.name, universe=row.dataset.universe,
            expected_digest=row.dataset.digest(), mutation_kind=row.dataset.mutation_kind,
            fence_deduplicates=bool(fence is not None and fence.deduplicates), requests=requests, effects=effects,
            snapshots=tuple(self.snapshots), runs=tuple(self.runs), fault=evidence,
            completeness=Completeness(proxy_log_dropped=dropped, ledger_read=ledger_read,
                                      unmatched_proxy_entries=unexplained, receiver_in_flight=in_flight,
                                      tap_overflow=tap_overflowed(family.tap.connections())),
        )
        seconds = time.monotonic() - started
        cpu = round(sum(finish.cpu_s for finish in self.finishes), 3)
        processes, warm = len(self.finishes), sum(finish.warm for finish in self.finishes)
        if receiver is None:
            return SinkRowResult(self.sink.name, self.role, UNVERIFIED, None, exit_codes, history.digest(), seconds,
                                 (UNVERIFIED_REASON,), history, history.ending(), cpu_seconds=cpu,
                                 processes=processes, warm_processes=warm)
        results = (*check_all(history), exercised(history))
        counters = Counters.of(results)
        if self.role == "certified":
            verdict, reasons = certified_verdict(results, history.ending(), row.expect,
                                                 history.runs[-1].stated if history.runs else ())
        else:
            verdict, reasons = baseline_verdict(counters, must_be_caught)
        return SinkRowResult(self.sink.name, self.role, verdict, counters, exit_codes, history.digest(), seconds,
                             reasons, history, history.ending(), results, cpu_seconds=cpu,
                             processes=processes, warm_processes=warm)
