"""Parent + child topology admission (seed: "Execution algorithm" step 6), in one transaction.

The caller opens the transaction; these functions only run statements on its cursor. A
concurrent admission of the same parent key waits on the parent's primary key, then finds the
stored row and resumes or conflicts, so exactly one caller ever writes a topology.
"""

# SQL text here is composed only from module constants (column lists, lock clauses); every value
# is passed as a query parameter.
# ruff: noqa: S608

from __future__ import annotations

from collections.abc import Callable, Iterable

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.journal.ids import operation_id_for
from sink.journal.postgres.connection import Cursor
from sink.journal.postgres.effects import check_admission_not_stale
from sink.journal.postgres.rows import (
    OPERATION_COLUMNS,
    OPERATION_INSERT,
    Row,
    child_params,
    operation_of,
    to_instant,
)
from sink.journal.records import (
    AdmittedParent,
    AxesState,
    OperationRow,
    ParentAdmission,
    ParentRecord,
)

PARENT_COLUMNS = (
    "parent_id, operation_namespace, parent_delivery_key, parent_plan_digest, plan_ref, "
    "profile_contract_digest, child_count, frontier_order, frontier_scope_end"
)
SELECT_PARENT_SQL = f"SELECT {PARENT_COLUMNS} FROM parents WHERE parent_id = %s"


def parent_of(row: Row) -> ParentRecord:
    scope_end = row["frontier_scope_end"]
    return ParentRecord(
        parent_id=row["parent_id"],
        operation_namespace=row["operation_namespace"],
        parent_delivery_key=row["parent_delivery_key"],
        parent_plan_digest=row["parent_plan_digest"],
        plan_ref=row["plan_ref"],
        profile_contract_digest=row["profile_contract_digest"],
        child_count=int(row["child_count"]),
        frontier_order=None if row["frontier_order"] is None else int(row["frontier_order"]),
        frontier_scope_end=None if scope_end is None else to_instant(scope_end),
    )


def lock_domains(cur: Cursor, domains: Iterable[str]) -> None:
    """Create (idempotently) and lock the effect-domain rows, always in sorted order."""
    ordered = sorted(set(domains))
    if not ordered:
        return
    cur.execute(
        "INSERT INTO rest_delivery_effect_domain_lock (effect_conflict_domain) "
        "SELECT unnest(%s::text[]) ORDER BY 1 ON CONFLICT DO NOTHING",
        (ordered,),
    )
    cur.execute(
        "SELECT effect_conflict_domain FROM rest_delivery_effect_domain_lock "
        "WHERE effect_conflict_domain = ANY(%s) ORDER BY effect_conflict_domain FOR UPDATE",
        (ordered,),
    )


def load_children(cur: Cursor, parent_id: str) -> tuple[OperationRow, ...]:
    cur.execute(
        f"SELECT {OPERATION_COLUMNS} FROM operations WHERE parent_id = %s ORDER BY child_ordinal",
        (parent_id,),
    )
    return tuple(operation_of(row) for row in cur.fetchall())


def load_parent_record(cur: Cursor, parent_id: str) -> ParentRecord | None:
    cur.execute(SELECT_PARENT_SQL, (parent_id,))
    row = cur.fetchone()
    return None if row is None else parent_of(row)


def _same_intent(stored: ParentRecord, children: tuple[OperationRow, ...], admission: ParentAdmission) -> bool:
    """Same plan digest and the same (delivery key, intent digest) per child, in order. The plan
    digest already binds every other field of the topology."""
    stored_keys = [(c.descriptor.delivery_key, c.descriptor.mutation_intent_digest) for c in children]
    wanted_keys = [(c.delivery_key, c.mutation_intent_digest) for c in admission.children]
    return stored.parent_plan_digest == admission.parent_plan_digest and stored_keys == wanted_keys


def admit(cur: Cursor, admission: ParentAdmission, *, journal_epoch: int, initial: AxesState,
          fault: Callable[[str], None]) -> AdmittedParent:
    """Write the parent and every child, or resume an identical admission, or raise INTENT_CONFLICT."""
    parent_id = admission.parent_id
    namespace = admission.operation_namespace
    lock_domains(cur, (c.effect_conflict_domain for c in admission.children))
    cur.execute(
        "INSERT INTO parents (parent_id, operation_namespace, parent_delivery_key, parent_plan_digest, "
        "plan_ref, profile_contract_digest, child_count) VALUES (%s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT DO NOTHING RETURNING parent_id",
        (parent_id, namespace, admission.parent_delivery_key, admission.parent_plan_digest,
         admission.plan_ref, admission.profile_contract_digest, len(admission.children)),
    )
    if cur.fetchone() is None:
        stored = load_parent_record(cur, parent_id)
        children = load_children(cur, parent_id)
        if stored is None or not _same_intent(stored, children, admission):
            raise DeliveryError(
                ErrorCode.INTENT_CONFLICT,
                f"parent {parent_id} is already admitted with a different intent",
            )
        return AdmittedParent(stored, children, created=False)
    ids = [operation_id_for(namespace, c.delivery_key) for c in admission.children]
    cur.execute("SELECT operation_id FROM operations WHERE operation_id = ANY(%s) LIMIT 1", (ids,))
    clash = cur.fetchone()
    if clash is not None:
        raise DeliveryError(
            ErrorCode.INTENT_CONFLICT,
            f"delivery key of child operation {clash['operation_id']} is already admitted under another parent",
        )
    check_admission_not_stale(cur, list(zip(ids, admission.children, strict=True)))
    fault("admit.parent_inserted")
    cur.executemany(
        OPERATION_INSERT,
        [
            child_params(c, operation_id=op_id, parent_id=parent_id, namespace=namespace,
                         axes=initial, epoch=journal_epoch)
            for c, op_id in zip(admission.children, ids, strict=True)
        ],
    )
    stored = load_parent_record(cur, parent_id)
    if stored is None:  # pragma: no cover - inserted above in this transaction
        raise RuntimeError("parent row vanished inside its own transaction")
    return AdmittedParent(stored, load_children(cur, parent_id), created=True)
