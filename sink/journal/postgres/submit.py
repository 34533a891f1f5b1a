"""The critical submit transaction (seed: pre-submit sequence step 3), in few statements.

Runs inside one transaction opened by the adapter (through the zero-RPO guard when configured):

1. one statement: gate row FOR SHARE, the operation's effect-domain lock row and the operation
   row FOR UPDATE (locking clauses apply in the order written: gate, domain, operation), and
   whether the caller holds the mutation lease on the server clock;
2. pure checks (revision, contract transition, lease, ordinal), the MAY_ATTEMPT marker read and
   its binding, and that no grant claim exists for it yet (shared ``marker_policy``);
3. two statements: overlapping operations and applied-generation pieces (GiST, ``&&``), decided
   by the shared fence policy;
4. one statement: append the attempt and claim a free capacity slot (SKIP LOCKED);
5. one statement: revision CAS to SUBMITTING + transition log;
6. last step before COMMIT: the marker's grant claim is published; only a claim created by this
   call grants (a claim already there means a rewound journal: refused, rolled back).
The fence reads are separate statements on purpose: under READ COMMITTED a statement that waits
for a row lock keeps its start snapshot for everything but the locked rows, so overlap data read
by the locking statement itself could miss a competitor that committed while we waited.
Any refusal raises before COMMIT, so nothing of it is written.
"""

# SQL text here is composed only from module constants (column lists); every value is a parameter.
# ruff: noqa: S608

from __future__ import annotations

from collections.abc import Callable

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.design.query import DesignContract
from sink.journal.decision_policy import refuse_if_abandoned
from sink.journal.marker_policy import (
    check_marker_binds,
    check_marker_unclaimed,
    grant_claim_for,
    require_claim_created,
)
from sink.journal.markers import MarkerStore
from sink.journal.port import CapacityExhausted, JournalRejection, RejectionReason, TransitionRejected
from sink.journal.postgres import effects
from sink.journal.postgres.connection import Cursor
from sink.journal.postgres.rows import OPERATION_COLUMNS, Row, operation_of
from sink.journal.records import NO_FACTS, Attempt, OperationRow, SubmitGrant, SubmitRequest
from sink.journal.transition_policy import check_revision, resolve_submit

ATTEMPT_COLUMNS = (
    "operation_id, attempt_ordinal, attempt_id, marker_digest, expected_revision, journal_epoch, "
    "capacity_scope, created_at, capacity_released"
)

_QUALIFIED_OPERATION_COLUMNS = ", ".join(f"o.{name.strip()}" for name in OPERATION_COLUMNS.split(","))

# Gate row (shared), the operation's effect-domain lock row and the operation row, locked in that
# canonical order (locking clauses are applied in the order written), plus the caller's lease.
_LOCK_GATE_DOMAIN_OPERATION = f"""
SELECT j.mutation_gate, j.journal_epoch, now() AS db_now, {_QUALIFIED_OPERATION_COLUMNS},
       coalesce((SELECT true FROM leases l WHERE l.lease_kind = 'mutation' AND l.subject_id = %(op)s
                 AND l.owner = %(owner)s AND l.expires_at > now()), false) AS lease_held
FROM journal_epoch j, rest_delivery_effect_domain_lock d, operations o
WHERE o.operation_id = %(op)s AND d.effect_conflict_domain = o.effect_conflict_domain
FOR SHARE OF j FOR UPDATE OF d, o
"""

# The attempt row and its slot in one statement; no free slot leaves `slot_no` NULL and the
# caller raises, rolling the attempt back with everything else.
_ATTEMPT_AND_SLOT = f"""
WITH attempt AS (
    INSERT INTO attempts (operation_id, attempt_ordinal, attempt_id, marker_digest, expected_revision,
                          journal_epoch, capacity_scope)
    VALUES (%(op)s, %(ordinal)s, %(attempt)s, %(marker)s, %(expected)s, %(epoch)s, %(scope)s)
    RETURNING {ATTEMPT_COLUMNS}
), slot AS (
    UPDATE capacity_slots s SET attempt_id = %(attempt)s, operation_id = %(op)s, reserved_at = now()
    FROM (SELECT capacity_scope, slot_no FROM capacity_slots
          WHERE capacity_scope = %(scope)s AND attempt_id IS NULL
          ORDER BY slot_no LIMIT 1 FOR UPDATE SKIP LOCKED) free
    WHERE s.capacity_scope = free.capacity_scope AND s.slot_no = free.slot_no
    RETURNING s.slot_no
)
SELECT attempt.*, (SELECT slot_no FROM slot) AS slot_no,
       (SELECT slots FROM capacity_scopes WHERE capacity_scope = %(scope)s) AS scope_slots
FROM attempt
"""

CasAxes = Callable[..., OperationRow]


def attempt_of(row: Row) -> Attempt:
    return Attempt(
        operation_id=row["operation_id"], attempt_ordinal=int(row["attempt_ordinal"]),
        attempt_id=row["attempt_id"], marker_digest=row["marker_digest"],
        expected_revision=int(row["expected_revision"]), journal_epoch=int(row["journal_epoch"]),
        capacity_scope=row["capacity_scope"], created_at=row["created_at"],
        capacity_released=bool(row["capacity_released"]),
    )


def _lock(cur: Cursor, request: SubmitRequest) -> tuple[int, Row]:
    """Lock gate, domain and operation; return the journal epoch and the locked row."""
    cur.execute(_LOCK_GATE_DOMAIN_OPERATION, {"owner": request.lease_owner, "op": request.operation_id})
    row = cur.fetchone()
    if row is None:
        cur.execute("SELECT mutation_gate, journal_epoch FROM journal_epoch")
        row = cur.fetchone()
        assert row is not None
        if row["mutation_gate"] == "OPEN":
            raise TransitionRejected(RejectionReason.UNKNOWN_OPERATION, f"no operation {request.operation_id}")
    if row["mutation_gate"] != "OPEN":
        raise DeliveryError(ErrorCode.JOURNAL_EPOCH_BLOCKED,
                            f"mutation gate is BLOCKED at journal epoch {row['journal_epoch']}")
    return int(row["journal_epoch"]), row


def critical_submit(cur: Cursor, request: SubmitRequest, *, contract: DesignContract, markers: MarkerStore,
                    cas_axes: CasAxes, fault: Callable[[str], None]) -> SubmitGrant:
    epoch, locked = _lock(cur, request)
    row = operation_of(locked)
    check_revision(row.operation_id, row.revision, request.expected_revision)
    chosen = resolve_submit(contract, row.axes, request.transition_id)
    refuse_if_abandoned(row)
    if not locked["lease_held"]:
        raise JournalRejection(RejectionReason.LEASE_NOT_HELD,
                               f"mutation lease on {row.operation_id} is not held by the caller")
    if request.attempt_ordinal != row.attempt_count + 1:
        raise TransitionRejected(
            RejectionReason.ATTEMPT_ORDINAL_NOT_NEXT,
            f"attempt ordinal must be {row.attempt_count + 1}, got {request.attempt_ordinal}",
        )
    check_marker_binds(markers.get(row.operation_namespace, row.operation_id, request.attempt_ordinal),
                       row, request, epoch)
    check_marker_unclaimed(markers.grant_claimed(row.operation_namespace, row.operation_id, request.attempt_ordinal),
                           request)
    effects.check_submit_fence(cur, row)
    cur.execute(_ATTEMPT_AND_SLOT, {
        "op": row.operation_id, "ordinal": request.attempt_ordinal, "attempt": request.attempt_id,
        "marker": request.marker_digest, "expected": request.expected_revision, "epoch": epoch,
        "scope": request.capacity_scope,
    })
    appended = cur.fetchone()
    assert appended is not None
    if appended["slot_no"] is None:
        if appended["scope_slots"] is None:
            raise JournalRejection(RejectionReason.CAPACITY_NOT_CONFIGURED,
                                   f"capacity scope {request.capacity_scope} is not configured")
        raise CapacityExhausted(RejectionReason.CAPACITY_EXHAUSTED,
                                f"all {appended['scope_slots']} slots of {request.capacity_scope} are reserved")
    fault("submit.attempt_appended")
    updated = cas_axes(cur, row, chosen.target, transition_id=chosen.id, actor_kind="automatic",
                       actor_id=request.lease_owner, reconciliation_id=None, evidence_digest=request.marker_digest,
                       extra_attempt=True, facts=NO_FACTS)  # a new attempt: an earlier answer is no evidence of it
    fault("submit.before_commit")
    require_claim_created(markers.claim_grant(grant_claim_for(row, request, epoch, locked["db_now"])), request)
    fault("submit.marker_claimed")
    return SubmitGrant(updated, attempt_of(appended))
