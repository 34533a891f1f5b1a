"""The identity conflict matrix: Hypothesis-generated mutations of payload, profile, binding and
policy (and a rotated secret), each resealed for the same boundary and offered for admission over
a journal where the unmutated delivery is already admitted.

Per mutation the row records what the real compiler and sealer produced (delivery keys, receiver
mutation keys, mutation intents: equal or not to the base), the admission's answer, and how many
network connections the process opened while it compiled, sealed and tried to admit: an audit
hook on ``socket.connect`` counts every one, whatever library would open it. Expectations:

* intent changed (payload, profile, binding): the same delivery keys with a different intent, the
  admission refused with ``REST_DELIVERY_INTENT_CONFLICT``, 0 connections;
* policy only or a secret rotated: every delivery key, receiver mutation key and intent identical
  (a policy change moves only ``execution_policy_digest``), 0 connections, and ``prepare`` resumes
  the pinned parent instead of sealing again.

In-process on purpose: the admission is the guard, and it runs before any transport exists.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from certification.identity_mutations import INTENT_CHANGING, WORKLOADS, Mutation, apply, strategy

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
SCOPE = (date(2026, 3, 1), date(2026, 3, 5))
CONFLICT = "REST_DELIVERY_INTENT_CONFLICT"
_COPIED = ("profiles", "bindings", "environments", "mappings", "workloads")


class _ConnectCounter:
    """``socket.connect`` audit events while armed (an audit hook cannot be removed: it stays
    installed, disarmed, for the life of the process)."""

    _installed: _ConnectCounter | None = None

    def __init__(self) -> None:
        self.armed = False
        self.count = 0
        self._lock = threading.Lock()

    @classmethod
    def get(cls) -> _ConnectCounter:
        if cls._installed is None:
            counter = cls()
            sys.addaudithook(counter._hook)
            cls._installed = counter
        return cls._installed

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.armed and event == "socket.connect":
            with self._lock:
                self.count += 1

    @contextmanager
    def counting(self) -> Iterator[list[int]]:
        result = [0]
        self.count, self.armed = 0, True
        try:
            yield result
        finally:
            self.armed = False
            result[0] = self.count


@dataclass(frozen=True, slots=True)
class _Identity:
    delivery_keys: tuple[str, ...]
    mutation_keys: tuple[str, ...]
    intents: tuple[str, ...]
    execution_policy: str


@dataclass
class _Base:
    root: Path
    journal: Any
    store: Any
    identity: dict[str, _Identity]


def _environment(extra: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _seal(scenarios: Path, family: str, store: Any) -> tuple[Any, Any]:
    from sink.compiler import compile_files, default_paths  # noqa: PLC0415
    from sink.preparation import build_topology, seal_all  # noqa: PLC0415
    from sink.source import source_port  # noqa: PLC0415

    workload = scenarios / "workloads" / f"{WORKLOADS[family]}.yaml"
    plan = compile_files(default_paths(workload))
    assert plan.workload.source is not None
    sealed = seal_all(plan, *SCOPE, source=source_port(plan.workload.source, workload.parent), store=store)
    return plan, build_topology(sealed, store)


def _identity(plan: Any, intent: Any) -> _Identity:
    children = intent.children
    return _Identity(tuple(c.descriptor["delivery_key"] for c in children),
                     tuple(c.descriptor["receiver_mutation_key"] for c in children),
                     tuple(c.descriptor["mutation_intent_digest"] for c in children),
                     str(plan.digests.execution_policy_digest))


def _open_base(work: Path) -> _Base:
    from sink.artifacts import LocalArtifactStore  # noqa: PLC0415
    from sink.journal.markers import FileMarkerStore  # noqa: PLC0415
    from sink.journal.sqlite.adapter import open_sqlite_journal  # noqa: PLC0415
    from sink.preparation import admit  # noqa: PLC0415

    root = work / "base"
    for name in _COPIED:
        shutil.copytree(SCENARIOS / name, root / name)
    store = LocalArtifactStore(work / "artifacts")
    journal = open_sqlite_journal(work / "journal.sqlite3", markers=FileMarkerStore(work / "markers"))
    identity = {}
    for family in WORKLOADS:
        plan, intent = _seal(root, family, store)
        admit(intent, store, journal)
        identity[family] = _identity(plan, intent)
    return _Base(root, journal, store, identity)


def _judge(mutation: Mutation, base: _Identity, now: _Identity, *, admission: str, resumed: bool | None,
           connects: int) -> tuple[bool, list[str]]:
    problems = []
    if connects:
        problems.append(f"{connects} network connection(s) before the admission answered")
    if now.delivery_keys != base.delivery_keys:
        problems.append("the delivery keys changed (the same boundary must keep its key)")
    intent_changed = now.intents != base.intents
    if mutation.kind in INTENT_CHANGING:
        if not intent_changed:
            problems.append("the mutation intent did not change")
        if admission != CONFLICT:
            problems.append(f"admission answered {admission}, not {CONFLICT}")
    else:
        if intent_changed or now.mutation_keys != base.mutation_keys:
            problems.append("the identity changed where only policy or a secret did")
        if mutation.kind == "secret" and now.execution_policy != base.execution_policy:
            problems.append("a rotated secret changed the execution policy digest")
        if mutation.kind == "policy" and now.execution_policy == base.execution_policy:
            problems.append("a policy change left the execution policy digest unchanged")
        if resumed is not True:
            problems.append("prepare did not resume the pinned parent")
    return intent_changed, problems


def _try_one(base: _Base, mutation: Mutation, index: int, work: Path) -> dict[str, Any]:
    from sink.contracts.errors import DeliveryError  # noqa: PLC0415
    from sink.preparation import admit, prepare  # noqa: PLC0415
    from sink.source import source_port  # noqa: PLC0415

    scenarios = work / f"example{index}"
    shutil.copytree(base.root, scenarios)
    env: dict[str, str] = {}
    apply(mutation, scenarios, env)
    resumed: bool | None = None
    with contextmanager(_environment)(env), _ConnectCounter.get().counting() as connects:
        plan, intent = _seal(scenarios, mutation.family, base.store)
        try:
            admitted = admit(intent, base.store, base.journal)
            admission = "resumed" if not admitted.created else "created"
        except DeliveryError as exc:
            admission = exc.code.value
        if mutation.kind not in INTENT_CHANGING:
            workload = scenarios / "workloads" / f"{WORKLOADS[mutation.family]}.yaml"
            assert plan.workload.source is not None
            resumed = prepare(plan, *SCOPE, source=source_port(plan.workload.source, workload.parent),
                              store=base.store, journal=base.journal).resumed
    shutil.rmtree(scenarios, ignore_errors=True)
    now = _identity(plan, intent)
    intent_changed, problems = _judge(mutation, base.identity[mutation.family], now, admission=admission,
                                      resumed=resumed, connects=connects[0])
    return {**mutation.describe(), "example": index, "intent_changed": intent_changed,
            "delivery_keys_equal": now.delivery_keys == base.identity[mutation.family].delivery_keys,
            "admission": admission, "prepare_resumed": resumed, "network_connections": connects[0],
            "verdict": "PASS" if not problems else "FAIL", "problems": problems}


def run_identity_matrix(work: Path, *, examples: int, seed: int) -> dict[str, Any]:
    """Draw ``examples`` mutations (deterministic for a seed), try each, and summarise."""
    from hypothesis import HealthCheck, Phase, given, settings  # noqa: PLC0415
    from hypothesis import seed as hypothesis_seed  # noqa: PLC0415

    base = _open_base(work)
    rows: list[dict[str, Any]] = []

    @hypothesis_seed(seed)
    @settings(max_examples=examples, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy())
    def explore(mutation: Mutation) -> None:
        rows.append(_try_one(base, mutation, len(rows), work))

    try:
        explore()
    finally:
        base.journal.close()
    return {"rows": rows, "totals": totals(rows)}


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    changed = [r for r in rows if r["class"] in INTENT_CHANGING]
    kept = [r for r in rows if r["class"] not in INTENT_CHANGING]
    by_class: dict[str, int] = {}
    for row in rows:
        by_class[row["class"]] = by_class.get(row["class"], 0) + 1
    return {
        "examples": len(rows), "by_class": by_class, "failed": sum(r["verdict"] == "FAIL" for r in rows),
        "network_connections_before_conflict": sum(r["network_connections"] for r in changed),
        "intent_changed": len(changed),
        "intent_conflict_ratio": (sum(r["admission"] == CONFLICT for r in changed) / len(changed)) if changed else None,
        "identity_kept": len(kept),
        "identity_identical_ratio": (sum(not r["intent_changed"] and r["delivery_keys_equal"] for r in kept)
                                     / len(kept)) if kept else None,
    }


class IdentityMatrixFailed(RuntimeError):
    """The identity matrix process did not produce its result (the message carries no payload)."""


class IdentityRun:
    """The identity matrix in a process of its own, run beside the fault matrix's lanes."""

    def __init__(self, work: Path, *, examples: int, seed: int) -> None:
        import subprocess  # noqa: PLC0415

        work.mkdir(parents=True, exist_ok=True)
        self._out = work / "identity.json"
        # stderr is dropped: a Hypothesis report would print the drawn example's values.
        self._process = subprocess.Popen(
            [sys.executable, "-m", "certification.identity_matrix", "--work", str(work), "--examples",
             str(examples), "--seed", str(seed), "--out", str(self._out)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def result(self, timeout: float = 900.0) -> dict[str, Any]:
        import json  # noqa: PLC0415
        import subprocess  # noqa: PLC0415

        try:
            code = self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            raise IdentityMatrixFailed(f"the identity matrix did not finish within {timeout:.0f} s") from None
        if code != 0 or not self._out.exists():
            raise IdentityMatrixFailed(f"the identity matrix process exited with status {code}")
        document: dict[str, Any] = json.loads(self._out.read_text(encoding="utf-8"))
        return document

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


def main(argv: list[str] | None = None) -> int:
    """``python -m certification.identity_matrix --work DIR --examples N --seed S --out FILE``: a
    process of its own, so the connection count sees this matrix and nothing else."""
    import argparse  # noqa: PLC0415
    import json  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="identity-matrix")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--examples", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    body = run_identity_matrix(args.work, examples=args.examples, seed=args.seed)
    args.out.write_text(json.dumps(body, sort_keys=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
