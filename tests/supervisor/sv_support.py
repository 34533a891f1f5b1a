"""Supervisor test harness: a real mock receiver and fault proxy (processes on free ports), a
SQLite journal with its marker store, and children whose requests are built from test rows."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from sink.compiler import compile_files, default_paths
from sink.contracts.plan import CompiledPlan
from sink.contracts.profile import OperationProfile
from sink.contracts.profile_ack import Extractor
from sink.contracts.profile_verification import SummaryQuery, VerificationSpec
from sink.contracts.transport import PreparedRequest
from sink.design.query import load_design_contract
from sink.journal.markers import FileMarkerStore
from sink.journal.records import (
    ChildDescriptor,
    GenerationKey,
    MutationKind,
    OperationRow,
    ParentAdmission,
    Receipt,
    ScopeRange,
    TransitionRequest,
)
from sink.journal.sqlite.adapter import SqliteJournal, open_sqlite_journal
from sink.payload.summary_digest import rows_digest
from sink.runtime.backoff import DigestJitter
from sink.runtime.ports import SupervisorConfig, SupervisorPorts
from sink.runtime.verification import ExpectedDelivery
from sink.transport import HttpxRestTransport, NoAuth
from sink.transport.body import BytesBody

REPO = Path(__file__).resolve().parents[2]
ADMIN = {"X-Restproof-Admin": "1"}


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _wait(path: Path, process: subprocess.Popen[bytes], what: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.exists():
            try:
                document = json.loads(path.read_text())
                if isinstance(document, dict):
                    return document
            except ValueError:
                pass
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited {process.returncode}")
        time.sleep(0.05)
    raise RuntimeError(f"{what} not ready")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Services:
    receiver: subprocess.Popen[bytes]
    proxy: subprocess.Popen[bytes]
    data_url: str
    admin_url: str
    proxy_url: str
    control_url: str
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    def effects(self) -> list[dict[str, Any]]:
        return list(self.http.get(self.admin_url + "/_admin/effects").json()["items"])

    def requests(self) -> list[dict[str, Any]]:
        return list(self.http.get(self.admin_url + "/_admin/requests").json()["items"])

    def proxy_log(self) -> list[dict[str, Any]]:
        return list(self.http.get(self.control_url + "/log").json()["entries"])

    def rule(self, rule: dict[str, Any]) -> None:
        response = self.http.post(self.control_url + "/rules", json=rule, headers=ADMIN)
        assert response.status_code < 300, response.text

    def reset(self) -> None:
        self.http.post(self.control_url + "/reset", json={}, headers=ADMIN).raise_for_status()
        self.http.post(self.admin_url + "/_admin/reset", json={}, headers=ADMIN).raise_for_status()


def start_services(behaviour: str, work: Path) -> Services:
    state = work / "receiver"
    receiver = subprocess.Popen(
        [str(Path(sys.executable).with_name("mock-receiver")), "serve", "--host", "127.0.0.1", "--port", "0",
         "--admin-port", "0",
         "--behaviour", str(REPO / "scenarios" / "receivers" / f"{behaviour}.yaml"), "--state-dir", str(state)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    endpoints = _wait(state / "endpoints.json", receiver, "mock-receiver")
    ready = work / "proxy-ready.json"
    proxy = subprocess.Popen(
        [sys.executable, "-m", "fault_proxy", "serve", "--listen", "127.0.0.1:0", "--upstream",
         endpoints["data_url"], "--control", "127.0.0.1:0", "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    info = _wait(ready, proxy, "fault-proxy")
    return Services(receiver, proxy, endpoints["data_url"], endpoints["admin_url"],
                    f"http://{info['proxy']}", f"http://{info['control']}")


SUMMARY = VerificationSpec(summary=SummaryQuery(
    method="GET", path="/mock/v1/resources/{resource}/summary",
    query={"range_start": "{scope.from}", "range_end": "{scope.to}"},
    row_count=Extractor(body_json_pointer="/row_count"), content_digest=Extractor(body_json_pointer="/content_digest"),
    digest_scheme="mock-receiver.rows.v1",
))


def sync_plan() -> CompiledPlan:
    return compile_files(default_paths(REPO / "scenarios" / "workloads" / "measurements-sync.yaml"))


def sync_profile(*, summary: bool = True) -> OperationProfile:
    profile = sync_plan().operation
    return profile.model_copy(update={"verification": SUMMARY if summary else None})


@dataclass(frozen=True)
class TestChild:
    day: str
    next_day: str
    rows: tuple[dict[str, Any], ...]

    @property
    def key(self) -> str:
        return sha(f"delivery:{self.day}")

    def body(self) -> bytes:
        return json.dumps(list(self.rows), separators=(",", ":")).encode()


class TestRequests:
    """ChildRequests over in-memory rows (the sealed artifacts of the real composition root)."""

    def __init__(self, children: dict[str, TestChild]) -> None:
        self._children = children  # delivery key -> child

    def mutation_request(self, operation: OperationRow) -> PreparedRequest:
        child = self._children[operation.delivery_key]
        return PreparedRequest(
            method="POST",
            path_and_query=f"/mock/v1/resources/measurements/batches?range_start={child.day}&range_end={child.next_day}",
            semantic_headers=(("Idempotency-Key", operation.delivery_key.removeprefix("sha256:")),),
            content_type="application/json", body=BytesBody(child.body()),
            extract_pointers=("/receipt_id", "/accepted_rows", "/rejected_rows"),
        )

    def poll_request(self, operation: OperationRow, receipt: Receipt) -> PreparedRequest | None:
        return None

    def summary_request(self, operation: OperationRow) -> PreparedRequest | None:
        child = self._children[operation.delivery_key]
        return PreparedRequest(
            method="GET",
            path_and_query=f"/mock/v1/resources/measurements/summary?range_start={child.day}&range_end={child.next_day}",
            semantic_headers=(), content_type=None, body=None, extract_pointers=("/row_count", "/content_digest"),
        )

    def expected(self, operation: OperationRow) -> ExpectedDelivery:
        child = self._children[operation.delivery_key]
        return ExpectedDelivery(rows=len(child.rows), content_digest=rows_digest(child.rows))


def children_for(days: list[str], rows_per_day: int = 3) -> list[TestChild]:
    children = []
    for day in days:
        next_day = time.strftime("%Y-%m-%d", time.gmtime(time.mktime(time.strptime(day, "%Y-%m-%d")) + 86400 + 7200))
        rows = tuple({"business_date": day, "site": f"s{i}", "value": i} for i in range(rows_per_day))
        children.append(TestChild(day, next_day, rows))
    return children


def admit(journal: SqliteJournal, children: list[TestChild], parent_key: str = "parent-1") -> str:
    descriptors = tuple(
        ChildDescriptor(
            ordinal=index, scope=ScopeRange(f"{c.day}T00:00:00Z", f"{c.next_day}T00:00:00Z"), delivery_key=c.key,
            mutation_intent_digest=sha(f"intent:{c.day}"), payload_ref=f"payload-{index}",
            payload_digest=sha(c.body().decode()), generation=GenerationKey("2026-09-01T00:00:00Z", 0),
            frontier_order=index, coverage_proof_digest=sha("coverage"), effect_conflict_domain="domain-a",
            mutation_kind=MutationKind.PARTITION_REPLACE,
        )
        for index, c in enumerate(children)
    )
    admitted = journal.admit_parent(ParentAdmission(
        operation_namespace="ns-test", parent_delivery_key=parent_key, parent_plan_digest=sha("plan"),
        plan_ref="plan-ref", profile_contract_digest=sha("profile"), children=descriptors,
    ))
    for row in admitted.children:
        journal.transition(TransitionRequest(row.operation_id, row.revision, "plan_sealed"))
    return admitted.parent.parent_id


class FakeClock:
    """Monotonic time that sleeps for real only briefly (backoffs are asserted, not waited)."""

    def __init__(self) -> None:
        self.slept: list[int] = []

    def monotonic_ms(self) -> int:
        return int(time.monotonic() * 1000)

    def sleep_ms(self, milliseconds: int) -> None:
        self.slept.append(milliseconds)


@dataclass
class Rig:
    journal: SqliteJournal
    ports: SupervisorPorts
    config: SupervisorConfig
    clock: FakeClock
    requests: TestRequests


def rig(work: Path, proxy_url: str, children: list[TestChild], *, worker: str = "worker-1",
        journal_path: Path | None = None, summary: bool = True) -> Rig:
    markers = FileMarkerStore(work / "markers")
    journal = open_sqlite_journal(journal_path or work / "journal.sqlite3", markers=markers)
    journal.configure_capacity("mock", 4)
    clock = FakeClock()
    requests = TestRequests({c.key: c for c in children})
    ports = SupervisorPorts(
        journal=journal, markers=markers, transport=HttpxRestTransport(proxy_url, NoAuth()), requests=requests,
        contract=load_design_contract(), jitter_for=DigestJitter, clock=clock,
    )
    config = SupervisorConfig(worker_id=worker, profile=sync_profile(summary=summary), capacity_scope="mock")
    return Rig(journal, ports, config, clock, requests)
