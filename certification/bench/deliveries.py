"""One receiver, one synthetic source, many measured deliveries of it: what the throughput and RSS
benches share.

``DeliveryBench`` starts the mock receiver (a bench personality: large children, no vendor
quota), writes the workspace, exports the interval's sealed requests once with ``delivery bundle``
(the naive baselines post exactly those bytes), then runs deliveries on demand. Every delivery
starts from an empty receiver ledger and, for the sink, a fresh state directory, and is checked
against the receiver's ground truth: one effect per child, the exact row count, no scope applied
twice. A delivery that fails that check is a wrong result, never a figure.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from certification.bench import workspace
from certification.bench.processes import Measured, cpu_seconds, run_measured
from certification.bytecode import precompile
from certification.services import Receiver, receiver_process
from certification.sinks import Invocation, SinkSpec, default_values, render

PREPARE_ONLY_FAILPOINT = "journal.acquire_lease.before"
"""The reference sink's first supervisor write after admission: a run stopped there has frozen,
sealed and admitted everything and sent nothing, so the resume that follows is pure delivery."""


@dataclass(frozen=True, slots=True)
class Delivery:
    label: str
    measured: Measured
    receiver_cpu_s: float
    rows: int
    wire_bytes: int
    ledger_ok: bool
    ledger_detail: str

    @property
    def ok(self) -> bool:
        return self.measured.exit_code == 0 and self.ledger_ok

    def figures(self) -> dict[str, Any]:
        m = self.measured
        return {"exit_code": m.exit_code, "wall_s": round(m.wall_s, 3), "sink_cpu_s": round(m.cpu_s, 3),
                "receiver_cpu_s": round(self.receiver_cpu_s, 3), "peak_rss_mib": round(m.peak_rss_mib, 1),
                "rows_per_s": round(self.rows / m.wall_s, 1) if m.wall_s else 0.0,
                "mb_per_s": round(self.wire_bytes / 1e6 / m.wall_s, 3) if m.wall_s else 0.0,
                "ledger": self.ledger_detail}


class DeliveryBench:
    def __init__(self, root: Path, receiver: Receiver, *, space: workspace.Workspace, bundle_dir: Path,
                 bundle: dict[str, Any], bundle_export: Measured, bytecode: str) -> None:
        self.root, self.receiver, self.space, self.bundle_dir, self.bundle = root, receiver, space, bundle_dir, bundle
        self.rows = sum(int(child["rows"]) for child in bundle["children"])
        self.wire_bytes = sum(int(child["wire_bytes"]) for child in bundle["children"])
        self.bundle_export = bundle_export
        """``delivery bundle``: what the naive baselines need done before their loop (freeze and seal)."""
        self.bytecode = bytecode
        """How the measured Python processes get their bytecode (``precompile_measured_code``)."""
        self._runs = 0

    def _values(self, state: Path) -> dict[str, str]:
        return {**default_values(), **self.space.values(), "state_dir": str(state), "worker_id": "bench-host1",
                "bundle_dir": str(self.bundle_dir), "receiver_url": self.receiver.data_url}

    def _fresh(self, *, reset: bool = True) -> Path:
        self._runs += 1
        if reset:
            self.receiver.reset()
        return self.root / f"run{self._runs:03d}"

    def _measure(self, label: str, invocation: Invocation, *, idle: bool = False,
                 ground_truth: Callable[[], tuple[bool, str]] | None = None) -> Delivery:
        """``idle``: a fixed-cost run that sends nothing new (its rows and wire bytes are 0);
        ``ground_truth``: its check when not ``ledger_check`` (every child's scope exactly once)."""
        before = cpu_seconds(self.receiver.process.pid)
        measured = run_measured(invocation)
        receiver_cpu = cpu_seconds(self.receiver.process.pid) - before
        ok, detail = (ground_truth or self.ledger_check)()
        shutil.rmtree(invocation.cwd.parent, ignore_errors=True)  # the run's state: sealed copies of the source
        rows, wire = (0, 0) if idle else (self.rows, self.wire_bytes)
        return Delivery(label, measured, receiver_cpu, rows, wire, ok, detail)

    def sink(self, spec: SinkSpec, *, via: str | None = None, reset: bool = True) -> Delivery:
        """The sink's whole ``run``: freeze, seal, admit, deliver, verify (any sink under test).
        ``via``: another URL in front of the receiver (the fault proxy); ``reset=False`` keeps the
        ledger (the load bench delivers while locust writes to it)."""
        work = self._fresh(reset=reset)
        values = self._values(work / "state")
        if via is not None:
            values["bindings_dir"] = str(workspace.point_binding(work / "bindings", via))
            values["receiver_url"] = via
        invocation = Invocation(render(spec.run, values), work / "host", _env())
        return self._measure(spec.name, invocation)

    def _prepared(self, work: Path) -> tuple[dict[str, str], str]:
        """A first run that stops at ``PREPARE_ONLY_FAILPOINT`` (SIGKILL, nothing sent): its values
        and the parent it admitted."""
        values = self._values(work / "state")
        prepare = ("{delivery}", "run", "{workload}", "--scope-from", "{scope_from}", "--scope-to", "{scope_to}",
                   "--bindings-dir", "{bindings_dir}", "--state-dir", "{state_dir}", "--format", "json")
        run_measured(Invocation(render(prepare, values), work / "prepare", _env(PREPARE_ONLY_FAILPOINT)))
        return values, _parent_id(work / "state" / "journal.sqlite3")

    @staticmethod
    def _resume(command: tuple[str, ...], parent: str, state: Path) -> tuple[str, ...]:
        return (*command, "resume", "--operation-id", parent, "--apply", "--state-dir", str(state),
                "--worker-id", "bench-host2", "--format", "json")

    def reference_delivery_only(self, profile: Path | None = None) -> Delivery:
        """The reference sink's delivery of already sealed, admitted children: a prepare run, then
        ``delivery resume`` is measured."""
        work = self._fresh()
        values, parent = self._prepared(work)
        command = (values["delivery"],) if profile is None else \
            (values["python"], "-m", "certification.bench.cpu_profile", str(profile), "sink.cli:main")
        resume = self._resume(command, parent, work / "state")
        return self._measure("reference-delivery", Invocation(resume, work / "host", _env()))

    def reference_idle(self) -> Delivery:
        """The reference delivery's fixed cost: a prepare run and an untimed resume deliver every
        child, then a second ``delivery resume`` of the same parent is measured. It starts, loads
        the pinned plan, opens the journal, finds every child finalized, sends nothing and reports;
        the ledger must still hold each scope exactly once."""
        work = self._fresh()
        values, parent = self._prepared(work)
        resume = self._resume((values["delivery"],), parent, work / "state")
        first = run_measured(Invocation(resume, work / "deliver", _env()))
        if first.exit_code != 0:
            return Delivery("reference-idle", first, 0.0, 0, 0, False, f"the untimed resume exited {first.exit_code}")
        return self._measure("reference-idle", Invocation(resume, work / "host", _env()), idle=True)

    def naive(self, mode: str) -> Delivery:
        work = self._fresh()
        argv = (default_values()["python"], "-m", "certification.bench.naive_loop", mode, "--bundle",
                str(self.bundle_dir), "--url", self.receiver.data_url)
        return self._measure(f"naive-{mode}", Invocation(argv, work / "host", _env()))

    def naive_idle(self) -> Delivery:
        """The loop's fixed cost: the same loop over a bundle without children (it starts, imports
        httpx, opens a client and posts nothing); nothing may reach the receiver."""
        work = self._fresh()
        empty = self.root / "empty-bundle"
        (empty / "bodies").mkdir(parents=True, exist_ok=True)
        (empty / "bundle.json").write_text(json.dumps({"children": []}))
        argv = (default_values()["python"], "-m", "certification.bench.naive_loop", "loop", "--bundle",
                str(empty), "--url", self.receiver.data_url)
        return self._measure("naive-idle", Invocation(argv, work / "host", _env()), idle=True,
                             ground_truth=self._ledger_empty)

    def _ledger_empty(self) -> tuple[bool, str]:
        effects = self.receiver.effects()
        return not effects, f"effects={len(effects)} (none expected)"

    def ledger_check(self) -> tuple[bool, str]:
        """Ground truth after one delivery: one effect per child scope, every row, nothing twice."""
        end = self.space.size.scope_to.isoformat()
        effects = [e for e in self.receiver.effects() if str(e["scope_start"]) < end]  # this source's scopes only
        scopes = [(str(e["scope_start"]), str(e["scope_end"])) for e in effects]
        applied = sum(int(e["accepted_rows"]) for e in effects)
        expected = {(c["scope_from"], c["scope_to"]) for c in self.bundle["children"]}
        doubled = len(scopes) - len(set(scopes))
        missing = len(expected - set(scopes))
        ok = doubled == 0 and missing == 0 and applied == self.rows
        return ok, f"effects={len(effects)} rows={applied}/{self.rows} doubled={doubled} missing={missing}"


MEASURED_PACKAGES = ("sink", "certification")
"""The reference sink's package and the naive loop's (``certification.bench.naive_loop``)."""


def precompile_measured_code() -> str:
    """Compile the measured processes' modules to bytecode before anything is timed, as installing
    a wheel does (pip compiles every module it installs; the loop's httpx and httpcore were). An
    editable checkout under ``PYTHONDONTWRITEBYTECODE=1`` (this project's machines) would otherwise
    compile about 120 sink modules from source in every process: 0.15 s of CPU that a resume's pair
    loop never pays. ``certify run`` does the same for the processes it starts. Returns what the
    artifact records."""
    if precompile(MEASURED_PACKAGES) == len(MEASURED_PACKAGES):
        return "precompiled before measuring, as a wheel install does"
    return "not all precompiled (a location could not be written): some modules compiled in every process"


def _env(failpoint: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RESTPROOF_FAILPOINT"}
    env[workspace.TOKEN_ENV] = workspace.TOKEN
    if failpoint is not None:
        env["RESTPROOF_FAILPOINT"] = failpoint
    return env


def _parent_id(journal: Path) -> str:
    """The one admitted parent of a fresh state directory (read-only look at the SQLite journal)."""
    connection = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = connection.execute("SELECT parent_id FROM parents").fetchall()
    finally:
        connection.close()
    if len(rows) != 1:
        raise RuntimeError(f"expected one admitted parent after the prepare run, found {len(rows)}")
    return str(rows[0][0])


@contextmanager
def delivery_bench(root: Path, size: workspace.SourceSize, *, child_bytes: int,
                   ledger_only: bool = False) -> Iterator[DeliveryBench]:
    bytecode = precompile_measured_code()
    behaviour = workspace.behaviour_only(root / "space", child_bytes=child_bytes, ledger_only=ledger_only)
    with receiver_process(behaviour, root / "receiver") as receiver:
        space = workspace.build(root / "space", size, receiver_url=receiver.data_url, child_bytes=child_bytes,
                                ledger_only=ledger_only)
        bundle_dir = root / "bundle"
        argv = (default_values()["delivery"], "bundle", str(space.workload), "--scope-from",
                workspace.SCOPE_FROM.isoformat(), "--scope-to", size.scope_to.isoformat(),
                "--bindings-dir", str(space.bindings_dir), "--out", str(bundle_dir))
        export = run_measured(Invocation(argv, root / "bundle-host", _env()))
        if export.exit_code != 0:
            raise RuntimeError(f"delivery bundle exited {export.exit_code}")
        shutil.rmtree(bundle_dir / "artifacts", ignore_errors=True)  # the bodies/ files are what is posted
        bundle = json.loads((bundle_dir / "bundle.json").read_text())
        yield DeliveryBench(root, receiver, space=space, bundle_dir=bundle_dir, bundle=bundle, bundle_export=export,
                           bytecode=bytecode)
