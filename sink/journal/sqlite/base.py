"""Connection, transaction and clock plumbing of the SQLite journal, plus its simple tables.

Concurrency: every write runs in ``BEGIN IMMEDIATE``, which takes SQLite's single write lock up
front. That lock is the effect-domain lock of the embedded adapter: it serialises every
critical transaction across threads and processes that share the file (a second writer waits up
to the busy timeout). WAL mode lets readers proceed meanwhile.

Clock: SQLite has no server clock, so the adapter's injected ``clock`` is "the database clock".
It is read once, right after ``BEGIN IMMEDIATE``, while the write lock is held, and that single
value decides every lease and timestamp of the transaction (the same role PostgreSQL's ``now()``
plays). Every process sharing one file must use the same clock source (the default: host UTC).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.design.query import DesignContract, load_design_contract
from sink.journal.durability import NON_DURABLE_WARNING, Durability, check_sqlite_synchronous
from sink.journal.ids import require_digest, require_ident
from sink.journal.markers import MarkerStore
from sink.journal.port import (
    CapacityExhausted,
    CriticalCommitGuard,
    JournalConfigurationError,
    JournalRejection,
    LeaseUnavailable,
    RejectionReason,
)
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
from sink.journal.sqlite import migrations, opening
from sink.journal.sqlite.codec import decode_time, encode_time, lease_from_row

Clock = Callable[[], datetime]
FaultHook = Callable[[str], None]
LOG = logging.getLogger(__name__)

# Writes whose commit authorises an external action or records effect authority: they refuse to
# commit unless synchronous is FULL or stronger (durable mode).
CRITICAL_WRITES = frozenset({"admit", "transition", "submit", "frontier", "gate_attest", "retire_marker",
                             "operator_decision"})


def system_clock() -> datetime:
    return datetime.now(UTC)


class SqliteJournalBase:
    adapter_name = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        markers: MarkerStore,
        contract: DesignContract | None = None,
        clock: Clock = system_clock,
        require_zero_rpo: bool = False,
        busy_timeout_s: float = 30.0,
        fault_hook: FaultHook | None = None,
        durability: Durability = Durability.DURABLE,
        read_only: bool = False,
    ) -> None:
        self._durability = Durability(durability)
        if require_zero_rpo:
            raise JournalConfigurationError(
                "zero-RPO is required but the SQLite journal cannot prove synchronous replication; "
                "use the PostgreSQL journal"
            )
        encode_time(clock())  # a naive clock is refused before the file is touched
        self._markers = markers
        self._contract = contract if contract is not None else load_design_contract()
        self._clock = clock
        self._fault_hook = fault_hook
        self._lock = threading.RLock()
        self._read_only = read_only
        self._conn = opening.connect(Path(path), read_only=read_only, busy_timeout_s=busy_timeout_s)
        if read_only:
            self._version = migrations.LATEST_VERSION  # checked by opening.connect
            return
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            if self._durability is Durability.DURABLE:
                self._conn.execute("PRAGMA synchronous=FULL")
            else:
                LOG.warning(NON_DURABLE_WARNING)
                self._conn.execute("PRAGMA synchronous=OFF")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._version = migrations.migrate(self._conn, encode_time(self._clock()))
            with self._write("open") as (conn, now):
                conn.execute(
                    "INSERT OR IGNORE INTO journal_gate (singleton, state, journal_epoch, reason, changed_at) "
                    "VALUES (1, ?, 1, 'initial epoch of a new journal', ?)",
                    (GateState.OPEN.value, encode_time(now)),
                )
        except BaseException:
            self._conn.close()
            raise

    # ----- plumbing ----------------------------------------------------------------------------
    @property
    def critical_commit_guard(self) -> CriticalCommitGuard | None:
        return None

    @property
    def markers(self) -> MarkerStore:
        return self._markers

    def now(self) -> datetime:
        return self._clock()

    def schema_version(self) -> int:
        return self._version

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _fault(self, point: str) -> None:
        # Test hook: lets the kill tests stop a process at a named point inside a transaction.
        if self._fault_hook is not None:
            self._fault_hook(point)

    @contextmanager
    def _write(self, name: str) -> Iterator[tuple[sqlite3.Connection, datetime]]:
        if self._read_only:
            raise JournalRejection(RejectionReason.INVALID_REQUEST, f"the journal was opened read-only ({name})")
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                if name in CRITICAL_WRITES and self._durability is Durability.DURABLE:
                    level = self._conn.execute("PRAGMA synchronous").fetchone()[0]
                    check_sqlite_synchronous(int(level), transaction=name)
                now = self._clock()
                encode_time(now)  # rejects a naive clock before anything is written
                yield self._conn, now
                self._fault(f"{name}.before_commit")
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        # A deferred transaction gives multi-statement reads one consistent snapshot.
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                yield self._conn
            finally:
                self._conn.execute("COMMIT")

    # ----- gate --------------------------------------------------------------------------------
    @staticmethod
    def _gate(conn: sqlite3.Connection) -> GateStatus:
        row = conn.execute("SELECT * FROM journal_gate WHERE singleton = 1").fetchone()
        return GateStatus(
            state=GateState(row["state"]),
            journal_epoch=row["journal_epoch"],
            reason=row["reason"],
            attested_by=row["attested_by"],
            attestation_digest=row["attestation_digest"],
        )

    @staticmethod
    def _require_gate_open(conn: sqlite3.Connection) -> GateStatus:
        gate = SqliteJournalBase._gate(conn)
        if gate.state is not GateState.OPEN:
            raise DeliveryError(
                ErrorCode.JOURNAL_EPOCH_BLOCKED,
                f"mutation gate is BLOCKED at journal epoch {gate.journal_epoch}",
            )
        return gate

    def gate_status(self) -> GateStatus:
        with self._read() as conn:
            return self._gate(conn)

    def block_mutations(self, *, reason: str, actor: Actor) -> GateStatus:
        if not reason or len(reason) > 500:
            raise JournalRejection(RejectionReason.INVALID_REQUEST, "reason must be 1-500 characters")
        with self._write("gate_block") as (conn, now):
            conn.execute(
                "UPDATE journal_gate SET state = ?, reason = ?, attested_by = ?, attestation_digest = NULL, "
                "changed_at = ? WHERE singleton = 1",
                (GateState.BLOCKED.value, reason, actor.actor_id, encode_time(now)),
            )
            return self._gate(conn)

    def attest_epoch(self, *, new_epoch: int, actor: Actor, attestation_digest: str) -> GateStatus:
        require_digest(attestation_digest, "attestation_digest")
        if actor.kind is not ActorKind.OPERATOR:
            raise JournalRejection(RejectionReason.OPERATOR_REQUIRED, "only an operator attests a journal epoch")
        with self._write("gate_attest") as (conn, now):
            current = self._gate(conn)
            if new_epoch <= current.journal_epoch:
                raise JournalRejection(
                    RejectionReason.EPOCH_NOT_INCREASING,
                    f"new epoch {new_epoch} must exceed the current epoch {current.journal_epoch}",
                )
            conn.execute(
                "UPDATE journal_gate SET state = ?, journal_epoch = ?, reason = ?, attested_by = ?, "
                "attestation_digest = ?, changed_at = ? WHERE singleton = 1",
                (GateState.OPEN.value, new_epoch, "epoch attested", actor.actor_id, attestation_digest,
                 encode_time(now)),
            )
            return self._gate(conn)

    # ----- leases ------------------------------------------------------------------------------
    def acquire_lease(self, request: LeaseRequest) -> Lease:
        with self._write("lease") as (conn, now):
            expires = encode_time(now + request.ttl)
            row = conn.execute(
                "SELECT * FROM leases WHERE kind = ? AND subject_id = ?", (request.kind.value, request.subject_id)
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO leases (kind, subject_id, owner, expires_at, fencing_token) VALUES (?, ?, ?, ?, 1)",
                    (request.kind.value, request.subject_id, request.owner, expires),
                )
            elif row["owner"] == request.owner and decode_time(row["expires_at"]) > now:
                conn.execute(
                    "UPDATE leases SET expires_at = ? WHERE kind = ? AND subject_id = ?",
                    (expires, request.kind.value, request.subject_id),
                )
            elif decode_time(row["expires_at"]) <= now:
                conn.execute(
                    "UPDATE leases SET owner = ?, expires_at = ?, fencing_token = fencing_token + 1 "
                    "WHERE kind = ? AND subject_id = ?",
                    (request.owner, expires, request.kind.value, request.subject_id),
                )
            else:
                raise LeaseUnavailable(
                    RejectionReason.LEASE_HELD_BY_OTHER,
                    f"{request.kind.value} lease on {request.subject_id} is held by another owner",
                )
            return self._lease(conn, request.kind, request.subject_id)

    @staticmethod
    def _lease(conn: sqlite3.Connection, kind: LeaseKind, subject_id: str) -> Lease:
        row = conn.execute(
            "SELECT * FROM leases WHERE kind = ? AND subject_id = ?", (kind.value, subject_id)
        ).fetchone()
        return lease_from_row(row)

    @staticmethod
    def _require_lease(
        conn: sqlite3.Connection, now: datetime, kind: LeaseKind, subject_id: str, owner: str, *,
        rejection: type[JournalRejection] = JournalRejection,
    ) -> None:
        row = conn.execute(
            "SELECT owner, expires_at FROM leases WHERE kind = ? AND subject_id = ?", (kind.value, subject_id)
        ).fetchone()
        if row is None or row["owner"] != owner or decode_time(row["expires_at"]) <= now:
            raise rejection(
                RejectionReason.LEASE_NOT_HELD, f"{kind.value} lease on {subject_id} is not held by the caller"
            )

    def release_lease(self, kind: LeaseKind, subject_id: str, owner: str) -> None:
        with self._write("lease_release") as (conn, now):
            self._require_lease(conn, now, kind, subject_id, owner)
            # Keep the row (and its fencing token) but expire it now.
            conn.execute(
                "UPDATE leases SET expires_at = ? WHERE kind = ? AND subject_id = ?",
                (encode_time(now), kind.value, subject_id),
            )

    def get_lease(self, kind: LeaseKind, subject_id: str) -> Lease | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT * FROM leases WHERE kind = ? AND subject_id = ?", (kind.value, subject_id)
            ).fetchone()
            return None if row is None else lease_from_row(row)

    # ----- capacity ----------------------------------------------------------------------------
    def configure_capacity(self, scope: str, slots: int) -> CapacityStatus:
        require_ident(scope, "capacity scope")
        if slots < 0:
            raise JournalRejection(RejectionReason.INVALID_REQUEST, "slots must be >= 0")
        with self._write("capacity_configure") as (conn, _now):
            conn.execute(
                "INSERT INTO capacity_scopes (scope, slots) VALUES (?, ?) "
                "ON CONFLICT (scope) DO UPDATE SET slots = excluded.slots",
                (scope, slots),
            )
            return self._capacity(conn, scope)

    @staticmethod
    def _capacity(conn: sqlite3.Connection, scope: str) -> CapacityStatus:
        row = conn.execute("SELECT slots FROM capacity_scopes WHERE scope = ?", (scope,)).fetchone()
        if row is None:
            raise JournalRejection(RejectionReason.CAPACITY_NOT_CONFIGURED, f"capacity scope {scope} is not configured")
        held = conn.execute(
            "SELECT attempt_id, operation_id FROM capacity_reservations WHERE scope = ? ORDER BY attempt_id", (scope,)
        ).fetchall()
        return CapacityStatus(scope=scope, slots=row["slots"], held_by_attempts=tuple(r[0] for r in held),
                              held_by_operations=tuple(sorted({r[1] for r in held})))

    def capacity_status(self, scope: str) -> CapacityStatus:
        with self._read() as conn:
            return self._capacity(conn, scope)

    @classmethod
    def _reserve_capacity(
        cls, conn: sqlite3.Connection, scope: str, attempt_id: str, operation_id: str, now: datetime
    ) -> None:
        row = conn.execute("SELECT slots FROM capacity_scopes WHERE scope = ?", (scope,)).fetchone()
        if row is None:
            raise JournalRejection(RejectionReason.CAPACITY_NOT_CONFIGURED, f"capacity scope {scope} is not configured")
        # Count only (index on scope): the submit needs to know whether a slot is free, not which
        # attempts hold the others.
        held = conn.execute("SELECT COUNT(*) FROM capacity_reservations WHERE scope = ?", (scope,)).fetchone()[0]
        if held >= row["slots"]:
            raise CapacityExhausted(
                RejectionReason.CAPACITY_EXHAUSTED, f"all {row['slots']} slots of {scope} are reserved"
            )
        conn.execute(
            "INSERT INTO capacity_reservations (attempt_id, scope, operation_id, reserved_at) VALUES (?, ?, ?, ?)",
            (attempt_id, scope, operation_id, encode_time(now)),
        )

    @staticmethod
    def _release_capacity(conn: sqlite3.Connection, operation_id: str) -> None:
        conn.execute("DELETE FROM capacity_reservations WHERE operation_id = ?", (operation_id,))
        conn.execute(
            "UPDATE attempts SET capacity_released = 1 WHERE operation_id = ? AND capacity_released = 0",
            (operation_id,),
        )
