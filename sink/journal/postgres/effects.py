"""Generation/overlap fence and the applied-generation interval map, under the domain lock.

Every function here runs inside a transaction that already holds the
``rest_delivery_effect_domain_lock`` row of the operation's conflict domain FOR UPDATE, so the
overlap decision and the write that depends on it are linearised per physical receiver effect.
Overlap is PostgreSQL's range ``&&`` on half-open tstzranges, served by the GiST indexes; the
decision itself is the shared policy (sink.journal.submit_policy) so both adapters agree.
"""

# SQL text here is composed only from module constants (column lists, lock clauses); every value
# is passed as a query parameter.
# ruff: noqa: S608

from __future__ import annotations

from collections.abc import Sequence

from sink.journal.interval_map import Interval, apply_generation, bounding_scope
from sink.journal.postgres.connection import Cursor
from sink.journal.postgres.rows import (
    OPERATION_COLUMNS,
    generation_of,
    generation_params,
    operation_of,
    range_to_scope,
    scope_to_range,
)
from sink.journal.records import ChildDescriptor, GenerationInterval, GenerationKey, OperationRow, ScopeRange
from sink.journal.submit_policy import check_not_stale, check_submit_permitted


def overlapping_operations(cur: Cursor, domain: str, scope: ScopeRange, *, excluding: str = "") -> list[OperationRow]:
    """Every operation of `domain` whose scope overlaps `scope` (GiST: domain = and range &&),
    except `excluding` (the candidate itself, which the policy ignores anyway)."""
    cur.execute(
        f"SELECT {OPERATION_COLUMNS} FROM operations WHERE effect_conflict_domain = %s AND scope_range && %s "
        "AND operation_id <> %s",
        (domain, scope_to_range(scope), excluding),
    )
    return [operation_of(row) for row in cur.fetchall()]


def overlapping_intervals(cur: Cursor, domain: str, scope: ScopeRange) -> list[Interval]:
    cur.execute(
        "SELECT scope_range, generation_interval_end, generation_correction_revision FROM applied_generation_map "
        "WHERE effect_conflict_domain = %s AND scope_range && %s ORDER BY lower(scope_range)",
        (domain, scope_to_range(scope)),
    )
    return [(range_to_scope(r["scope_range"]), generation_of(r)) for r in cur.fetchall()]


def check_admission_not_stale(cur: Cursor, candidates: Sequence[tuple[str, ChildDescriptor]]) -> None:
    """STALE_GENERATION at admission: one overlap query per domain over the children's bounding
    scope, then the shared policy per child."""
    by_domain: dict[str, list[tuple[str, ChildDescriptor]]] = {}
    for op_id, child in candidates:
        by_domain.setdefault(child.effect_conflict_domain, []).append((op_id, child))
    for domain in sorted(by_domain):
        members = by_domain[domain]
        bound = bounding_scope(c.scope for _, c in members)
        others = overlapping_operations(cur, domain, bound)
        pieces = overlapping_intervals(cur, domain, bound)
        if not others and not pieces:
            continue
        for op_id, child in members:
            check_not_stale(op_id, child, others, pieces)


def check_submit_fence(cur: Cursor, op: OperationRow) -> None:
    """STALE_GENERATION, APPEND_SCOPE_ALREADY_APPLIED, OVERLAPPING_EFFECT_IN_FLIGHT (shared policy)."""
    d = op.descriptor
    check_submit_permitted(
        op.operation_id, d,
        overlapping_operations(cur, d.effect_conflict_domain, d.scope, excluding=op.operation_id),
        overlapping_intervals(cur, d.effect_conflict_domain, d.scope),
    )


def raise_applied_generation(cur: Cursor, domain: str, scope: ScopeRange, generation: GenerationKey) -> None:
    """Raise the normalised map over `scope` to at least `generation` (never lowers it).

    Only the pieces overlapping or touching `scope` can change, so only they are replaced.
    """
    scope_range = scope_to_range(scope)
    cur.execute(
        "DELETE FROM applied_generation_map WHERE effect_conflict_domain = %s "
        "AND (scope_range && %s OR scope_range -|- %s) "
        "RETURNING scope_range, generation_interval_end, generation_correction_revision",
        (domain, scope_range, scope_range),
    )
    existing = sorted(((range_to_scope(r["scope_range"]), generation_of(r)) for r in cur.fetchall()),
                      key=lambda piece: piece[0].start)
    rows = []
    for piece, gen in apply_generation(existing, scope, generation):
        gen_end, gen_rev = generation_params(gen)
        rows.append((domain, scope_to_range(piece), gen_end, gen_rev))
    cur.executemany(
        "INSERT INTO applied_generation_map (effect_conflict_domain, scope_range, generation_interval_end, "
        "generation_correction_revision) VALUES (%s, %s, %s, %s)",
        rows,
    )


def intervals(cur: Cursor, domain: str) -> tuple[GenerationInterval, ...]:
    cur.execute(
        "SELECT scope_range, generation_interval_end, generation_correction_revision "
        "FROM applied_generation_map WHERE effect_conflict_domain = %s ORDER BY lower(scope_range)",
        (domain,),
    )
    return tuple(GenerationInterval(domain, range_to_scope(r["scope_range"]), generation_of(r))
                 for r in cur.fetchall())
