"""Fast port fakes for driving ``SubmitStep`` and the ``Supervisor`` without a receiver: a SQLite
journal in tmp_path that records every write the runtime makes, a scripted transport that
records what was sent, a stepping clock, and recorders for failpoints and rate-limit calls.

Children, their requests and their admission come from tests/supervisor/sv_support.py (the same
test rows the receiver-backed supervisor tests use); only the transport is replaced, so one test
takes milliseconds instead of the ~11 s of a mock receiver start."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rt_support import response

from sink.contracts.profile import OperationProfile
from sink.contracts.results import ChildResult
from sink.contracts.transport import PreparedRequest, TransportOutcome
from sink.design.query import load_design_contract
from sink.journal.markers import FileMarkerStore, MarkerStore
from sink.journal.records import (
    FrontierResult,
    Lease,
    LeaseKind,
    LeaseRequest,
    OperationRow,
    Receipt,
    TransitionRequest,
)
from sink.journal.sqlite.adapter import SqliteJournal
from sink.journal.step_records import SubmitGrant, SubmitRequest
from sink.payload.summary_digest import rows_digest
from sink.runtime.backoff import JitterSource
from sink.runtime.lease_keeper import LeaseKeeper
from sink.runtime.ports import SupervisorConfig, SupervisorPorts
from sink.runtime.rate_limiter import RequestKind
from sink.runtime.submit_step import SubmitStep
from sink.runtime.supervisor import Supervisor
from sink.testing import Answer, ScriptedTransport
from tests.supervisor.sv_support import TestChild, TestRequests, admit, children_for, sync_profile

CONTRACT = load_design_contract()
CLOCK_START_MS = 50_000_000
"""Far from 0, so that a sum where a difference belongs (``now + start``) is far off, and beyond
half the mock fence's key retention (86 400 s), so such a sum also breaks the replay bound."""


class JournalClock:
    """The database clock, moved by the test (lease expiry without sleeping)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class RecordingJournal(SqliteJournal):
    """The SQLite adapter, with a log of every write the runtime asks of it, in order."""

    def __init__(self, path: Path, *, markers: MarkerStore, clock: JournalClock) -> None:
        super().__init__(path, markers=markers, clock=clock)
        self.writes: list[tuple[str, object]] = []
        self.drop_sealing = False
        """Lose every ``plan_sealed`` write (a journal that never advances: the step bound's case)."""

    def transition(self, request: TransitionRequest) -> OperationRow:
        self.writes.append(("transition", request))
        if self.drop_sealing and request.transition_id == "plan_sealed":
            current = self.get_operation(request.operation_id)
            assert current is not None
            return current
        return super().transition(request)

    def reserve_and_mark_submitting(self, request: SubmitRequest) -> SubmitGrant:
        self.writes.append(("reserve", request))
        return super().reserve_and_mark_submitting(request)

    def acquire_lease(self, request: LeaseRequest) -> Lease:
        self.writes.append(("acquire", request))
        return super().acquire_lease(request)

    def release_lease(self, kind: LeaseKind, subject_id: str, owner: str) -> None:
        self.writes.append(("release", (kind, subject_id, owner)))
        super().release_lease(kind, subject_id, owner)

    def promote_frontier(self, parent_id: str, *, lease_owner: str) -> FrontierResult:
        self.writes.append(("promote", (parent_id, lease_owner)))
        return super().promote_frontier(parent_id, lease_owner=lease_owner)

    def transitions(self) -> list[TransitionRequest]:
        return [w for kind, w in self.writes if kind == "transition" and isinstance(w, TransitionRequest)]

    def transition_ids(self) -> list[str | None]:
        return [t.transition_id for t in self.transitions()]

    def releases(self) -> list[object]:
        return [w for kind, w in self.writes if kind == "release"]


class AsyncRequests(TestRequests):
    """The test children's requests with a receipt poll (the async family)."""

    def poll_request(self, operation: OperationRow, receipt: Receipt) -> PreparedRequest | None:
        return PreparedRequest(method="GET", path_and_query=f"/mock/v1/dataset-jobs/{receipt.receipt_id}",
                               semantic_headers=(), content_type=None, body=None,
                               extract_pointers=("/phase", "/accepted_rows", "/rejected_rows"))


class NoSummaryRequests(TestRequests):
    def summary_request(self, operation: OperationRow) -> PreparedRequest | None:
        return None


def reads(children: list[TestChild], *, poll: TransportOutcome | None = None,
          summary: Callable[[TestChild], TransportOutcome] | None = None) -> Answer:
    """GET answers: a receipt poll gets ``poll``; a summary of a child's scope gets
    ``summary(child)`` (default: exactly its rows)."""

    def answer(request: PreparedRequest) -> TransportOutcome:
        if "/dataset-jobs/" in request.path_and_query:
            assert poll is not None, "no poll answer scripted"
            return poll
        child = next(c for c in children if f"range_start={c.day}&" in request.path_and_query)
        return (summary or summary_of)(child)

    return answer


class StepClock:
    """Monotonic time that moves only by the sleeps the runtime asks for (and by ``advance``)."""

    def __init__(self, start_ms: int = CLOCK_START_MS) -> None:
        self.now_ms = start_ms
        self.slept: list[int] = []

    def monotonic_ms(self) -> int:
        return self.now_ms

    def sleep_ms(self, milliseconds: int) -> None:
        self.slept.append(milliseconds)
        self.now_ms += milliseconds


class Failpoints:
    """Records every failpoint the runtime passes; raises ``Died`` at ``die_at``."""

    def __init__(self, die_at: str | None = None) -> None:
        self.die_at = die_at
        self.seen: list[str] = []

    def __call__(self, name: str) -> None:
        self.seen.append(name)
        if name == self.die_at:
            raise Died(name)


class Died(Exception):
    """A simulated process death at a failpoint."""


class RecordingLimiter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, RequestKind]] = []

    @contextmanager
    def admit(self, kind: RequestKind) -> Iterator[None]:
        self.calls.append(("admit", kind))
        try:
            yield
        finally:
            self.calls.append(("done", kind))

    def take_token(self, kind: RequestKind) -> None:
        self.calls.append(("token", kind))


class FixedJitter:
    """Always draws ``fraction`` of the range (0 gives a zero delay)."""

    def __init__(self, fraction: float = 0.5) -> None:
        self._fraction = fraction

    def draw(self, upper_inclusive: int) -> int:
        return int(upper_inclusive * self._fraction)


@dataclass
class FastRig:
    journal: RecordingJournal
    ports: SupervisorPorts
    config: SupervisorConfig
    clock: StepClock
    journal_clock: JournalClock
    transport: ScriptedTransport
    failpoints: Failpoints
    limiter: RecordingLimiter
    children: list[TestChild]
    parent_id: str = field(default="")

    def rows(self) -> list[OperationRow]:
        parent = self.journal.load_parent(self.parent_id)
        return sorted(parent.children, key=lambda child: child.descriptor.ordinal)

    def row(self, index: int = 0) -> OperationRow:
        return self.rows()[index]


def fast_rig(work: Path, transport: ScriptedTransport, *, days: tuple[str, ...] = ("2026-08-01",),
             profile: OperationProfile | None = None, worker: str = "worker-1",
             jitter: Callable[[str], JitterSource] | None = None, failpoints: Failpoints | None = None,
             journal_clock: JournalClock | None = None, admitted: bool = True, rows_per_day: int = 3,
             requests: type[TestRequests] = TestRequests, **config: object) -> FastRig:
    """A supervisor rig over a journal in ``work`` (shared by rigs built on the same directory)."""
    markers = FileMarkerStore(work / "markers")
    clock_of_journal = journal_clock or JournalClock()
    journal = RecordingJournal(work / "journal.sqlite3", markers=markers, clock=clock_of_journal)
    journal.configure_capacity("mock", 4)
    children = children_for(list(days), rows_per_day)
    points = failpoints or Failpoints()
    limiter = RecordingLimiter()
    clock = StepClock()
    ports = SupervisorPorts(
        journal=journal, markers=markers, transport=transport, requests=requests({c.key: c for c in children}),
        contract=CONTRACT, jitter_for=jitter or (lambda _: FixedJitter()), clock=clock, failpoint=points,
        limiter=limiter,
    )
    settings = SupervisorConfig(worker_id=worker, profile=profile or sync_profile(), capacity_scope="mock",
                                **config)  # type: ignore[arg-type]
    built = FastRig(journal, ports, settings, clock, clock_of_journal, transport, points, limiter, children)
    if admitted:
        built.parent_id = admit(journal, children)
        journal.writes.clear()  # the admission's own writes are not the runtime's
    return built


def scripted_rig(work: Path, submits: Sequence[Answer], *,
                 profile: OperationProfile | None = None, **kwargs: object) -> FastRig:
    """A ``fast_rig`` whose transport answers the mutations with ``submits`` in order and every
    read-only summary with exactly the children's rows (``reads``); the sync profile by default."""
    transport = ScriptedTransport(list(submits))
    rig = fast_rig(work, transport, profile=profile or sync_profile(), **kwargs)  # type: ignore[arg-type]
    transport.read = reads(rig.children)
    return rig


def accepted(rows: int = 3, receipt: str = "r-1") -> TransportOutcome:
    return response(200, {"/receipt_id": receipt, "/accepted_rows": rows, "/rejected_rows": 0})


def summary_of(child: TestChild, *, rows: int | None = None, digest: str | None = None) -> TransportOutcome:
    """The receiver's read-only summary of the child's scope (defaults: exactly its rows)."""
    return response(200, {"/row_count": len(child.rows) if rows is None else rows,
                          "/content_digest": rows_digest(child.rows) if digest is None else digest})


def submit_step(rig: FastRig) -> SubmitStep:
    """The rig's SubmitStep with its own lease keeper (as the supervisor builds it)."""
    keeper = LeaseKeeper(rig.journal, rig.config.worker_id, rig.config.lease_ttl, failpoint=rig.ports.failpoint)
    return SubmitStep(rig.ports, rig.config, keeper)


def gone_after_send(rig: FastRig, clock: JournalClock) -> FastRig:
    """Run one attempt of ``rig`` (built with a ``die_at`` failpoint) until that failpoint kills its
    worker, its request bytes traced as sent, then let the worker's mutation lease run out on the
    journal clock: a gone worker's SUBMITTING attempt, for a takeover."""
    rig.transport._trace = ("http11.send_request_headers.complete", "http11.send_request_body.complete")
    try:
        submit_step(rig).run(rig.row(), operation_started_ms=0, wake_attempts=0)
    except Died:
        clock.advance(rig.config.lease_ttl.total_seconds() + 1)
        return rig
    raise AssertionError("the worker was meant to die at its failpoint")


def drive(rig: FastRig, operation_id: str | None = None, supervisor: Supervisor | None = None) -> ChildResult:
    """Drive one child as a run would, and read its result back from the journal."""
    sup = supervisor or Supervisor(rig.ports, rig.config)
    op = operation_id or rig.row().operation_id
    row = sup.drive_child(op)
    return next(c for c in sup.result(row.parent_id).children if c.operation_id == op)
