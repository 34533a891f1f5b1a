"""Read-only observation of one accepted async child, for the triggerer (seed: "Airflow adapter":
read journal, acquire observation lease, GET certified receipt URL, CAS bounded observation, emit).

The same pure policy as the worker's ``ObserveStep`` decides each answer (``classify_poll``) and
the same evidence digest is recorded, but through the asynchronous journal client and poller. The
loop ends as soon as the operation is no longer WAITING (this observer or any other moved it), and
returns the revision it saw: an event is a hint, the journal stays the authority.

Duplicates are harmless by construction: the observation lease (database clock) admits one live
observer; a second one waits and rereads; an append needs the next ordinal and the lease; the axes
move only by CAS on the revision read. Losing any of these races means "someone else observed":
reread, never retry the write blindly. Every loop is bounded by the profile's poll budget.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Protocol

from sink.airflow.journal_async import AsyncObservationJournal, open_async_journal
from sink.airflow.locator import JournalLocator
from sink.contracts.plan import CompiledPlan
from sink.contracts.state import AcknowledgementState, ExecutionState
from sink.contracts.transport import PreparedRequest, TransportOutcome
from sink.design.query import DesignContract, load_design_contract
from sink.journal.durability import Durability
from sink.journal.port import JournalRejection, JournalUnavailable
from sink.journal.records import LeaseKind, LeaseRequest, OperationRow, TransitionRequest
from sink.request_templates import render_poll_path
from sink.runtime import ContractMove
from sink.runtime.journal_moves import outcome_digest
from sink.runtime.poll_classification import PollContext, PollReason, classify_poll

PLAN_SCHEMA_ID = "restproof.rest_delivery_plan.v1"
"""The pinned plan artifact's schema (``sink.preparation.admission.PLAN_ARTIFACT_SCHEMA_ID``)."""
DEFAULT_LEASE = timedelta(seconds=30)
DEFAULT_INTERVAL_MS = 5_000


class ObservationRefused(RuntimeError):
    """Nothing to observe: an unknown operation, or a waiting child without a pollable receipt."""


class Poller(Protocol):
    async def get(self, request: PreparedRequest) -> TransportOutcome: ...


@dataclass(frozen=True, slots=True)
class ReceiptEvent:
    operation_id: str
    observed_revision: int
    execution_state: str
    polls: int
    """Poll requests this observer sent (0 when it found the operation already moved)."""


Sleep = Callable[[float], Awaitable[None]]


class ReceiptObserver:
    def __init__(self, journal: AsyncObservationJournal, poller: Poller, plan: CompiledPlan, contract: DesignContract,
                 owner: str, *, lease_ttl: timedelta = DEFAULT_LEASE, sleep: Sleep = asyncio.sleep) -> None:
        self._journal, self._poller, self._plan, self._contract = journal, poller, plan, contract
        self._owner, self._ttl, self._sleep = owner, lease_ttl, sleep
        timeouts = plan.operation.timeouts
        self._interval_s = (timeouts.poll_interval_ms or DEFAULT_INTERVAL_MS) / 1000.0
        self._retry_s = (timeouts.poll_retry_ms or timeouts.poll_interval_ms or DEFAULT_INTERVAL_MS) / 1000.0
        self._deadline = timedelta(milliseconds=min(timeouts.operation_total_ms, timeouts.receiver_expiry_ms or 2**62))

    def _request(self, receipt_id: str) -> PreparedRequest:
        poll = self._plan.operation.acknowledgement.poll
        assert poll is not None
        pointer = poll.state.body_json_pointer
        return PreparedRequest(method="GET", path_and_query=render_poll_path(poll, {"id": receipt_id}),
                               semantic_headers=(), content_type=None, body=None,
                               extract_pointers=() if pointer is None else (pointer,),
                               extract_headers=() if poll.state.header is None else (poll.state.header,))

    async def run(self, operation_id: str) -> ReceiptEvent:
        poll, budget = self._plan.operation.acknowledgement.poll, self._plan.operation.poll_budget
        if poll is None or budget is None:
            raise ObservationRefused("the pinned profile has no receipt poll")
        polls, errors = 0, 0
        # Every turn either polls (bounded by the budget through classify_poll) or waits for
        # another observer or the journal; both kinds of turn are capped.
        for _ in range(2 * budget.max_observations + 2 * budget.max_consecutive_errors):
            row = await self._journal.get_operation(operation_id)
            if row is None:
                raise ObservationRefused(f"no operation {operation_id} in this journal")
            if row.axes.execution_state is not ExecutionState.WAITING:
                return ReceiptEvent(operation_id, row.revision, row.axes.execution_state.value, polls)
            try:
                await self._journal.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, operation_id, self._owner,
                                                               self._ttl))
            except JournalRejection:  # another live observer holds it: wait, then reread
                await self._sleep(self._interval_s)
                continue
            receipt = await self._journal.get_receipt(operation_id)
            if receipt is None:
                raise ObservationRefused(f"operation {operation_id} is waiting without a receipt")
            outcome = await self._poller.get(self._request(receipt.receipt_id))
            attempt = await self._journal.latest_attempt(operation_id)
            deadline_passed = attempt is not None and await self._journal.now() - attempt.created_at >= self._deadline
            decision = classify_poll(outcome, poll=poll, budget=budget, current=row.axes, contract=self._contract,
                                     context=PollContext(polls_made=row.observation_count + polls,
                                                         consecutive_errors=errors, deadline_passed=deadline_passed))
            polls, errors = polls + 1, decision.consecutive_errors
            try:
                row = await self._record(row, decision.observation, decision.move, outcome_digest(outcome))
            except JournalRejection:
                continue  # lease lost, ordinal taken or revision moved: someone else observed; reread
            if row.axes.execution_state is not ExecutionState.WAITING:
                return ReceiptEvent(operation_id, row.revision, row.axes.execution_state.value, polls)
            await self._sleep(self._retry_s if decision.reason is PollReason.TRANSIENT_ERROR else self._interval_s)
        row = await self._journal.get_operation(operation_id)
        assert row is not None
        return ReceiptEvent(operation_id, row.revision, row.axes.execution_state.value, polls)

    async def _record(self, row: OperationRow, observation: AcknowledgementState | None, move: ContractMove | None,
                      digest: str) -> OperationRow:
        if observation is not None:
            await self._journal.record_observation(row.operation_id, observation_ordinal=row.observation_count + 1,
                                                   acknowledgement_state=observation, evidence_digest=digest,
                                                   lease_owner=self._owner)
            fresh = await self._journal.get_operation(row.operation_id)
            assert fresh is not None
            row = fresh
        if move is not None:
            row = await self._journal.transition(TransitionRequest(
                operation_id=row.operation_id, expected_revision=row.revision, transition_id=move.transition_id,
                evidence_digest=digest, lease_owner=self._owner))
        return row


async def load_pinned_plan(journal: AsyncObservationJournal, artifacts_dir: str, operation_id: str) -> CompiledPlan:
    """The compiled plan the admission pinned (never an authoring manifest), read off the loop."""
    ref = await journal.plan_ref(operation_id)
    if ref is None:
        raise ObservationRefused(f"no operation {operation_id} in this journal")

    def read() -> CompiledPlan:
        from sink.artifacts.documents import read_document  # noqa: PLC0415
        from sink.artifacts.local import LocalArtifactStore  # noqa: PLC0415

        document = read_document(LocalArtifactStore(Path(artifacts_dir)), ref, PLAN_SCHEMA_ID)
        return CompiledPlan.model_validate(document["plan"])

    return await asyncio.to_thread(read)


async def observe_receipt(operation_id: str, locator: JournalLocator, *, owner: str,
                          lease_ttl: timedelta = DEFAULT_LEASE, durability: Durability = Durability.DURABLE,
                          sleep: Sleep = asyncio.sleep) -> ReceiptEvent:
    """Open the journal, the pinned plan and a poller; observe until the operation moves; close."""
    from sink.airflow.poll_http import AsyncReceiptPoller  # noqa: PLC0415

    contract = await asyncio.to_thread(load_design_contract)
    for _ in range(100):  # a journal that is down only delays the observation (bounded)
        try:
            journal = await open_async_journal(locator.journal, pg_schema=locator.pg_schema,
                                               markers_dir=locator.markers, contract=contract, durability=durability)
        except JournalUnavailable:
            await sleep(lease_ttl.total_seconds() / 3)
            continue
        try:
            plan = await load_pinned_plan(journal, locator.artifacts, operation_id)
            # A poll must end well inside the lease, so a renewal never finds it expired mid-request.
            poller = await AsyncReceiptPoller.open(plan, total_timeout_s=lease_ttl.total_seconds() / 3)
            try:
                return await ReceiptObserver(journal, poller, plan, contract, owner, lease_ttl=lease_ttl,
                                             sleep=sleep).run(operation_id)
            finally:
                await poller.aclose()
        except JournalUnavailable:
            await sleep(lease_ttl.total_seconds() / 3)
        finally:
            await journal.aclose()
    raise ObservationRefused("the journal stayed unavailable")
