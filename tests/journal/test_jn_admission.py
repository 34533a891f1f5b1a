"""Admission: one transaction for the whole parent; same intent resumes, different intent conflicts."""

from __future__ import annotations

from dataclasses import replace

import pytest
from jn_builders import NAMESPACE, admission, child, day, digest, week_parent

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.state import ExecutionState
from sink.journal.ids import operation_id_for
from sink.journal.port import DeliveryJournalPort
from sink.journal.records import (
    GenerationKey,
    MutationKind,
    TransitionRequest,
)

pytestmark = pytest.mark.timeout(60)


def test_admission_writes_parent_and_complete_topology(journal: DeliveryJournalPort) -> None:
    plan = week_parent("route-1")
    admitted = journal.admit_parent(plan)

    assert admitted.created is True
    assert admitted.parent.parent_plan_digest == plan.parent_plan_digest
    assert admitted.parent.child_count == 3
    assert admitted.parent.frontier_order is None
    assert [c.descriptor for c in admitted.children] == list(plan.children)
    assert all(c.revision == 0 and c.attempt_count == 0 for c in admitted.children)
    assert {c.axes.execution_state for c in admitted.children} == {ExecutionState.PLANNED}
    assert admitted.children[1].operation_id == operation_id_for(NAMESPACE, "route-1.c1")
    assert journal.load_parent(admitted.parent.parent_id) == admitted.__class__(
        admitted.parent, admitted.children, created=False
    )


def test_same_intent_resumes_without_writing(journal: DeliveryJournalPort) -> None:
    first = journal.admit_parent(week_parent("route-1"))
    sealed = journal.transition(TransitionRequest(first.children[0].operation_id, 0, "plan_sealed"))

    again = journal.admit_parent(week_parent("route-1"))

    assert again.created is False
    assert again.parent == first.parent
    # The resumed topology is the stored one (child 0 already moved on), not a re-planned one.
    assert again.children[0] == sealed
    assert again.children[1:] == first.children[1:]


def test_different_plan_for_same_parent_key_conflicts_and_writes_nothing(journal: DeliveryJournalPort) -> None:
    first = journal.admit_parent(week_parent("route-1"))
    changed = admission("route-1", [child(0, day(1), day(8), key="route-1.c0", intent="v2")], plan="plan-2")

    with pytest.raises(DeliveryError) as caught:
        journal.admit_parent(changed)

    assert caught.value.code is ErrorCode.INTENT_CONFLICT
    assert journal.load_parent(first.parent.parent_id).children == first.children


def test_reused_child_key_with_other_intent_conflicts_for_the_whole_parent(journal: DeliveryJournalPort) -> None:
    journal.admit_parent(week_parent("route-1"))
    # A new parent whose SECOND child reuses an admitted delivery key with another intent.
    clash = admission("route-2", [
        child(0, day(1), day(8), key="route-2.c0", domain="domain-b"),
        child(1, day(8), day(15), key="route-1.c1", domain="domain-b", intent="corrected-bytes"),
    ])

    with pytest.raises(DeliveryError) as caught:
        journal.admit_parent(clash)

    assert caught.value.code is ErrorCode.INTENT_CONFLICT
    assert journal.get_parent(clash.parent_id) is None
    assert journal.find_operation(NAMESPACE, "route-2.c0") is None  # nothing of the parent was written
    assert journal.find_operation(NAMESPACE, "route-1.c1").descriptor.mutation_intent_digest == digest(  # type: ignore[union-attr]
        "intent:route-1.c1:v1"
    )


def test_lower_overlapping_generation_is_refused_at_admission(journal: DeliveryJournalPort) -> None:
    journal.admit_parent(week_parent("gen-2", generation=GenerationKey("2026-09-01T00:00:00Z", 2)))
    lower = admission("gen-1", [child(0, day(5), day(10), key="gen-1.c0",
                                      generation=GenerationKey("2026-09-01T00:00:00Z", 1))])

    with pytest.raises(DeliveryError) as caught:
        journal.admit_parent(lower)

    assert caught.value.code is ErrorCode.STALE_GENERATION
    assert journal.get_parent(lower.parent_id) is None


def test_lower_generation_in_another_domain_or_range_is_admitted(journal: DeliveryJournalPort) -> None:
    journal.admit_parent(week_parent("gen-2", generation=GenerationKey("2026-09-01T00:00:00Z", 2)))
    elsewhere = admission("other", [
        child(0, day(1), day(8), key="other.c0", domain="domain-b", generation=GenerationKey("2026-09-01T00:00:00Z")),
    ])
    later_range = admission("feb", [
        # [22, 29) does not overlap the admitted [1, 22): half-open ranges only touch.
        child(0, day(22), day(29), key="feb.c0", generation=GenerationKey("2026-09-01T00:00:00Z")),
    ])

    assert journal.admit_parent(elsewhere).created
    assert journal.admit_parent(later_range).created


@pytest.mark.parametrize(
    "build",
    [
        lambda: child(0, day(8), day(1), key="k"),  # empty/inverted scope
        lambda: child(0, day(1), day(8), key="k", generation=GenerationKey("2026-09-01", 0)),
        lambda: admission("p", [child(0, day(1), day(9), key="a"), child(1, day(8), day(15), key="b")]),
        lambda: admission("p", [child(1, day(1), day(8), key="a")]),
        lambda: child(0, day(1), day(8), key="k", kind=MutationKind.INCREMENTAL_APPEND,
                      generation=GenerationKey("2026-09-01T00:00:00Z", 1)),
    ],
    ids=["inverted-scope", "generation-not-instant", "overlapping-children", "ordinals-not-dense", "append-correction"],
)
def test_invalid_topology_is_rejected_before_the_journal(build: object) -> None:
    with pytest.raises(ValueError):
        build()  # type: ignore[operator]


def test_conflict_messages_carry_identifiers_only(journal: DeliveryJournalPort) -> None:
    sentinel = "payload/SENTINEL-ROW-4242"
    original = child(0, day(1), day(8), key="route-s.c0")
    journal.admit_parent(admission("route-s", [replace(original, payload_ref=sentinel)]))
    changed = replace(original, payload_ref=sentinel, mutation_intent_digest=digest("other-intent"))
    plan = admission("route-s", [changed], plan="plan-2")
    with pytest.raises(DeliveryError) as caught:
        journal.admit_parent(plan)
    text = str(caught.value)
    assert caught.value.code is ErrorCode.INTENT_CONFLICT
    for secret_ish in ("SENTINEL", changed.mutation_intent_digest, plan.parent_plan_digest, changed.payload_digest):
        assert secret_ish not in text
