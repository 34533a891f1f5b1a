"""PostgreSQL journal: clock, gate/epoch, leases and the remote-job capacity semaphore.

Leases are decided by one statement each on the server clock (``now()`` of the transaction),
never on a worker clock. Capacity slots are rows claimed with ``FOR UPDATE SKIP LOCKED``.
"""

# SQL text here is composed only from module constants (column lists, lock clauses); every value
# is passed as a query parameter.
# ruff: noqa: S608

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sink.design.query import DesignContract
from sink.journal.ids import require_digest, require_ident
from sink.journal.markers import MarkerStore
from sink.journal.port import (
    CriticalCommitGuard,
    JournalRejection,
    LeaseUnavailable,
    RejectionReason,
)
from sink.journal.postgres.connection import Cursor, JournalConnections
from sink.journal.records import (
    Actor,
    ActorKind,
    CapacityStatus,
    GateState,
    GateStatus,
    Lease,
    LeaseKind,
    LeaseRequest,
)

FaultHook = Callable[[str], None]

_LEASE_COLUMNS = "lease_kind, subject_id, owner, expires_at, fencing_token"

# Take, renew or refuse in ONE statement: the same owner renews an unexpired lease (token kept);
# anyone, the same owner included, takes an expired one with token + 1; otherwise no row.
ACQUIRE_LEASE_SQL = f"""
INSERT INTO leases AS l (lease_kind, subject_id, owner, expires_at, fencing_token)
VALUES (%(kind)s, %(subject)s, %(owner)s, now() + %(ttl)s, 1)
ON CONFLICT (lease_kind, subject_id) DO UPDATE
SET owner = excluded.owner,
    expires_at = excluded.expires_at,
    fencing_token = CASE WHEN l.owner = excluded.owner AND l.expires_at > now()
                         THEN l.fencing_token ELSE l.fencing_token + 1 END
WHERE (l.owner = excluded.owner AND l.expires_at > now()) OR l.expires_at <= now()
RETURNING {_LEASE_COLUMNS}
"""

REQUIRE_LEASE_SQL = (
    "SELECT 1 FROM leases WHERE lease_kind = %s AND subject_id = %s AND owner = %s AND expires_at > now()"
)
"""One row when ``owner`` holds an unexpired lease of that kind on the subject (database clock)."""


def lease_of(row: dict[str, object]) -> Lease:
    expires = row["expires_at"]
    assert isinstance(expires, datetime)
    return Lease(
        kind=LeaseKind(str(row["lease_kind"])),
        subject_id=str(row["subject_id"]),
        owner=str(row["owner"]),
        expires_at=expires,
        fencing_token=int(str(row["fencing_token"])),
    )


class PostgresCommitGuard:
    """The zero-RPO guard in force (CriticalCommitGuard). Every critical transaction of the
    adapter already runs these checks inside itself; the methods let a caller re-check the
    quorum on demand."""

    def __init__(self, connections: JournalConnections) -> None:
        self._connections = connections

    def before_critical_commit(self, transaction_name: str) -> None:
        self._connections.check_quorum()

    def after_critical_commit(self, transaction_name: str) -> None:
        self._connections.check_quorum()


class PostgresJournalBase:
    adapter_name = "postgresql"

    def __init__(self, connections: JournalConnections, *, schema: str, markers: MarkerStore,
                 contract: DesignContract, version: int, fault_hook: FaultHook | None = None) -> None:
        self._db = connections
        self._schema = schema
        self._markers = markers
        self._contract = contract
        self._version = version
        self._fault_hook = fault_hook
        self._guard = PostgresCommitGuard(connections) if connections.zero_rpo is not None else None

    # ----- plumbing ----------------------------------------------------------------------------
    @property
    def critical_commit_guard(self) -> CriticalCommitGuard | None:
        return self._guard

    @property
    def markers(self) -> MarkerStore:
        return self._markers

    @property
    def schema(self) -> str:
        return self._schema

    def now(self) -> datetime:
        with self._db.read() as cur:
            cur.execute("SELECT now() AS now")
            row = cur.fetchone()
        assert row is not None
        value = row["now"]
        assert isinstance(value, datetime)
        return value

    def schema_version(self) -> int:
        return self._version

    def close(self) -> None:
        self._db.close()

    def _fault(self, point: str) -> None:
        # Test hook: the kill tests stop a process at a named point inside a transaction.
        if self._fault_hook is not None:
            self._fault_hook(point)

    # ----- gate --------------------------------------------------------------------------------
    @staticmethod
    def _gate(cur: Cursor, lock: str = "") -> GateStatus:
        cur.execute(
            "SELECT mutation_gate, journal_epoch, gate_reason, attested_by, attestation_digest "
            f"FROM journal_epoch {lock}"
        )
        row = cur.fetchone()
        assert row is not None
        return GateStatus(GateState(row["mutation_gate"]), int(row["journal_epoch"]), row["gate_reason"],
                          row["attested_by"], row["attestation_digest"])

    def gate_status(self) -> GateStatus:
        with self._db.read() as cur:
            return self._gate(cur)

    def block_mutations(self, *, reason: str, actor: Actor) -> GateStatus:
        if not reason or len(reason) > 500:
            raise JournalRejection(RejectionReason.INVALID_REQUEST, "reason must be 1-500 characters")
        # Not critical: closing the gate must work precisely when the quorum is gone.
        with self._db.write("gate_block", critical=False) as cur:
            cur.execute(
                "UPDATE journal_epoch SET mutation_gate = 'BLOCKED', gate_reason = %s, attested_by = %s, "
                "attestation_digest = NULL, changed_at = now()",
                (reason, actor.actor_id),
            )
            return self._gate(cur)

    def attest_epoch(self, *, new_epoch: int, actor: Actor, attestation_digest: str) -> GateStatus:
        require_digest(attestation_digest, "attestation_digest")
        if actor.kind is not ActorKind.OPERATOR:
            raise JournalRejection(RejectionReason.OPERATOR_REQUIRED, "only an operator attests a journal epoch")
        with self._db.write("gate_attest", critical=True) as cur:
            current = self._gate(cur, "FOR UPDATE")
            if new_epoch <= current.journal_epoch:
                raise JournalRejection(
                    RejectionReason.EPOCH_NOT_INCREASING,
                    f"new epoch {new_epoch} must exceed the current epoch {current.journal_epoch}",
                )
            cur.execute(
                "UPDATE journal_epoch SET mutation_gate = 'OPEN', journal_epoch = %s, "
                "gate_reason = 'epoch attested', attested_by = %s, attestation_digest = %s, changed_at = now()",
                (new_epoch, actor.actor_id, attestation_digest),
            )
            return self._gate(cur)

    # ----- leases ------------------------------------------------------------------------------
    def acquire_lease(self, request: LeaseRequest) -> Lease:
        with self._db.write("lease", critical=False) as cur:
            cur.execute(ACQUIRE_LEASE_SQL, {"kind": request.kind.value, "subject": request.subject_id,
                                         "owner": request.owner, "ttl": request.ttl})
            row = cur.fetchone()
        if row is None:
            raise LeaseUnavailable(
                RejectionReason.LEASE_HELD_BY_OTHER,
                f"{request.kind.value} lease on {request.subject_id} is held by another owner",
            )
        return lease_of(row)

    @staticmethod
    def _require_lease(cur: Cursor, kind: LeaseKind, subject_id: str, owner: str, *,
                       rejection: type[JournalRejection] = JournalRejection) -> None:
        cur.execute(REQUIRE_LEASE_SQL, (kind.value, subject_id, owner))
        if cur.fetchone() is None:
            raise rejection(RejectionReason.LEASE_NOT_HELD,
                                   f"{kind.value} lease on {subject_id} is not held by the caller")

    def release_lease(self, kind: LeaseKind, subject_id: str, owner: str) -> None:
        with self._db.write("lease_release", critical=False) as cur:
            # Keep the row (and its fencing token) but expire it now.
            cur.execute(
                "UPDATE leases SET expires_at = now() WHERE lease_kind = %s AND subject_id = %s "
                "AND owner = %s AND expires_at > now()",
                (kind.value, subject_id, owner),
            )
            if cur.rowcount != 1:
                raise JournalRejection(RejectionReason.LEASE_NOT_HELD,
                                       f"{kind.value} lease on {subject_id} is not held by the caller")

    def get_lease(self, kind: LeaseKind, subject_id: str) -> Lease | None:
        with self._db.read() as cur:
            cur.execute(f"SELECT {_LEASE_COLUMNS} FROM leases WHERE lease_kind = %s AND subject_id = %s",
                        (kind.value, subject_id))
            row = cur.fetchone()
        return None if row is None else lease_of(row)

    # ----- capacity ----------------------------------------------------------------------------
    def configure_capacity(self, scope: str, slots: int) -> CapacityStatus:
        require_ident(scope, "capacity scope")
        if slots < 0:
            raise JournalRejection(RejectionReason.INVALID_REQUEST, "slots must be >= 0")
        with self._db.write("capacity_configure", critical=False) as cur:
            cur.execute(
                "INSERT INTO capacity_scopes (capacity_scope, slots) VALUES (%s, %s) "
                "ON CONFLICT (capacity_scope) DO UPDATE SET slots = excluded.slots",
                (scope, slots),
            )
            # Wait for in-flight reservations, then keep exactly max(0, slots - held) free rows.
            cur.execute("SELECT slot_no, attempt_id FROM capacity_slots WHERE capacity_scope = %s FOR UPDATE",
                        (scope,))
            rows = cur.fetchall()
            held = sum(1 for r in rows if r["attempt_id"] is not None)
            free = sorted(r["slot_no"] for r in rows if r["attempt_id"] is None)
            wanted_free = max(0, slots - held)
            if len(free) > wanted_free:
                cur.execute("DELETE FROM capacity_slots WHERE capacity_scope = %s AND slot_no = ANY(%s)",
                            (scope, free[wanted_free:]))
            elif len(free) < wanted_free:
                start = max((r["slot_no"] for r in rows), default=-1) + 1
                cur.executemany("INSERT INTO capacity_slots (capacity_scope, slot_no) VALUES (%s, %s)",
                                [(scope, start + i) for i in range(wanted_free - len(free))])
            return self._capacity(cur, scope)

    @staticmethod
    def _capacity(cur: Cursor, scope: str) -> CapacityStatus:
        cur.execute("SELECT slots FROM capacity_scopes WHERE capacity_scope = %s", (scope,))
        row = cur.fetchone()
        if row is None:
            raise JournalRejection(RejectionReason.CAPACITY_NOT_CONFIGURED,
                                   f"capacity scope {scope} is not configured")
        cur.execute("SELECT attempt_id, operation_id FROM capacity_slots WHERE capacity_scope = %s "
                    "AND attempt_id IS NOT NULL ORDER BY attempt_id", (scope,))
        held = cur.fetchall()
        return CapacityStatus(scope=scope, slots=int(row["slots"]),
                              held_by_attempts=tuple(str(r["attempt_id"]) for r in held),
                              held_by_operations=tuple(sorted({str(r["operation_id"]) for r in held})))

    def capacity_status(self, scope: str) -> CapacityStatus:
        with self._db.read() as cur:
            return self._capacity(cur, scope)

    @staticmethod
    def _release_capacity(cur: Cursor, operation_id: str) -> None:
        cur.execute(
            "SELECT DISTINCT capacity_scope FROM capacity_slots WHERE operation_id = %s ORDER BY 1", (operation_id,)
        )
        for row in cur.fetchall():
            scope = row["capacity_scope"]
            # The scope row lock serialises releases with configure_capacity (row-count invariant).
            cur.execute("SELECT slots FROM capacity_scopes WHERE capacity_scope = %s FOR UPDATE", (scope,))
            slots_row = cur.fetchone()
            assert slots_row is not None
            cur.execute("SELECT count(*) AS n FROM capacity_slots WHERE capacity_scope = %s", (scope,))
            count_row = cur.fetchone()
            assert count_row is not None
            excess = max(0, int(count_row["n"]) - int(slots_row["slots"]))
            cur.execute(
                "DELETE FROM capacity_slots WHERE ctid IN (SELECT ctid FROM capacity_slots "
                "WHERE capacity_scope = %s AND operation_id = %s LIMIT %s)",
                (scope, operation_id, excess),
            )
            cur.execute(
                "UPDATE capacity_slots SET attempt_id = NULL, operation_id = NULL, reserved_at = NULL "
                "WHERE capacity_scope = %s AND operation_id = %s",
                (scope, operation_id),
            )
        cur.execute("UPDATE attempts SET capacity_released = true WHERE operation_id = %s "
                    "AND NOT capacity_released", (operation_id,))
