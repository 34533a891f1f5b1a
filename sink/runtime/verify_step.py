"""Verification of a child in VERIFYING (seed: "Execution algorithm" steps 12-13), from the journal.

The evidence is what the journal holds (the receiver's counters and flags recorded with the move
into VERIFYING, ``ResultFacts``) plus the profile's certified read-only summary of the child's
scope, read now: a process that did not see the receiver's answer verifies from the same facts as
the one that did. The verifier's decision is recorded with its code and outcome word.
"""

from __future__ import annotations

from sink.journal.records import OperationRow
from sink.runtime.failpoints import request_point
from sink.runtime.journal_moves import JournalMoves, boundary_observer, facts_digest
from sink.runtime.ports import SupervisorConfig, SupervisorPorts
from sink.runtime.rate_limiter import RequestKind
from sink.runtime.verification import (
    Counters,
    ExpectedDelivery,
    ReceiverSummary,
    VerificationEvidence,
    verify,
)


class VerifyStep:
    def __init__(self, ports: SupervisorPorts, config: SupervisorConfig) -> None:
        self._ports = ports
        self._config = config
        self._moves = JournalMoves(ports.journal, ports.failpoint)

    def run(self, row: OperationRow) -> OperationRow:
        profile = self._config.profile
        expected: ExpectedDelivery = self._ports.requests.expected(row)
        facts = row.facts
        # An answer without counters (a proven duplicate answers for an earlier request): the
        # summary decides.
        counters = Counters(facts.accepted_rows, facts.rejected_rows) if facts.has_counters else None
        evidence = VerificationEvidence(
            expected=expected, counters=counters, summary=self.read_summary(row),
            receiver_reported_partial=facts.receiver_reported_partial, rejection_proven=facts.rejection_proven,
            all_rows_accounted=profile.result_policy.all_rows_accounted,
        )
        decision = verify(evidence, current=row.axes, contract=self._ports.contract)
        return self._moves.apply(row, decision.move, write="record_verification", lease_owner=None,
                                 evidence_digest=facts_digest("restproof.runtime.verification",
                                                              {"outcome": decision.outcome.value,
                                                               "rows": expected.rows}),
                                 reason=decision.outcome.value)

    def read_summary(self, row: OperationRow) -> ReceiverSummary | None:
        """The profile's certified read-only summary of the child's scope, if it has one and the
        receiver answered it within bounds; None otherwise (verification then rests on counters)."""
        spec = self._config.profile.verification
        request = self._ports.requests.summary_request(row)
        if spec is None or spec.summary is None or request is None:
            return None
        with self._ports.limiter.admit(RequestKind.SUMMARY):
            self._ports.failpoint(request_point("summary", "before_send"))
            outcome = self._ports.transport.send(request, timeouts=self._config.profile.timeouts,
                                                 observer=boundary_observer("summary", self._ports.failpoint))
        self._ports.failpoint(request_point("summary", "before_record_result"))
        response = outcome.response
        if response is None or response.status != 200:
            return None
        rows = response.scalars.get(spec.summary.row_count.body_json_pointer or "")
        digest = response.scalars.get(spec.summary.content_digest.body_json_pointer or "")
        if isinstance(rows, bool) or not isinstance(rows, int) or not isinstance(digest, str):
            return None
        return ReceiverSummary(row_count=rows, content_digest=digest)
