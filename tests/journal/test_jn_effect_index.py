"""Effect index: normalised non-overlapping map of highest applied generation; retention keeps it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import JournalEnv
from hypothesis import given, settings
from hypothesis import strategies as st
from jn_builders import CAPACITY, admission, apply_fully, child, day, digest, instant, seal, step, submit, week_parent

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.state import RemoteEffect, VerificationState
from sink.journal.interval_map import apply_generation, highest_overlapping, is_normalised
from sink.journal.records import GenerationKey, LeaseKind, LeaseRequest, ScopeRange

pytestmark = pytest.mark.timeout(120)

GEN = [GenerationKey("2026-09-01T00:00:00Z", r) for r in range(6)]

ranges = st.tuples(st.integers(0, 40), st.integers(1, 12)).map(lambda t: (t[0], t[0] + t[1]))
applications = st.lists(st.tuples(ranges, st.integers(0, 5)), min_size=1, max_size=25)


@settings(deadline=None)  # pure and fast; a per-example deadline only measures the shared host's load
@given(applications)
def test_interval_map_is_normalised_highest_wins_and_never_lowers(ops: list[tuple[tuple[int, int], int]]) -> None:
    intervals: list[tuple[ScopeRange, GenerationKey]] = []
    expected: dict[int, int] = {}  # hour -> highest correction revision applied there
    for (lo, hi), rev in ops:
        before = dict(expected)
        intervals = apply_generation(intervals, ScopeRange(instant(lo), instant(hi)), GEN[rev])
        for hour in range(lo, hi):
            expected[hour] = max(expected.get(hour, -1), rev)
        assert is_normalised(intervals)
        for hour in range(0, 53):
            point = ScopeRange(instant(hour), instant(hour + 1))
            got = highest_overlapping(intervals, point)
            assert (None if got is None else got.correction_revision) == expected.get(hour)
            if hour in before:
                assert expected[hour] >= before[hour]


def test_is_normalised_detects_defects() -> None:
    a, b = ScopeRange(instant(0), instant(5)), ScopeRange(instant(3), instant(8))
    assert not is_normalised([(a, GEN[1]), (b, GEN[2])])  # overlap
    touching = ScopeRange(instant(5), instant(8))
    assert not is_normalised([(a, GEN[1]), (touching, GEN[1])])  # unmerged neighbours
    assert is_normalised([(a, GEN[1]), (touching, GEN[2])])


def test_fully_applied_raises_the_map_only_over_its_own_scope(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    jan = env.journal.admit_parent(admission("jan", [child(0, day(1), day(8), key="jan.c0", generation=GEN[3])]))
    apply_fully(env.journal, env.markers, jan.children[0])
    assert [(i.scope, i.highest_applied_generation) for i in env.journal.effect_intervals("domain-a")] == [
        (ScopeRange(day(1), day(8)), GEN[3])
    ]
    # A lower generation that does not overlap is untouched by the map ([8, 15) only touches [1, 8)).
    feb = env.journal.admit_parent(admission("feb", [child(0, day(8), day(15), key="feb.c0", generation=GEN[1])]))
    apply_fully(env.journal, env.markers, feb.children[0])
    assert [(i.scope, i.highest_applied_generation) for i in env.journal.effect_intervals("domain-a")] == [
        (ScopeRange(day(1), day(8)), GEN[3]), (ScopeRange(day(8), day(15)), GEN[1]),
    ]
    with pytest.raises(DeliveryError) as caught:  # a lower overlapping generation is stale for good
        env.journal.admit_parent(admission("jan-old", [child(0, day(5), day(6), key="jan-old.c0", generation=GEN[2])]))
    assert caught.value.code is ErrorCode.STALE_GENERATION
    assert env.journal.effect_intervals("domain-b") == ()


def test_retention_drops_verbose_rows_but_keeps_tombstones_and_map(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    op = seal(env.journal, env.journal.admit_parent(week_parent("route-1")).children[0])
    env.journal.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, op.operation_id, "poller", timedelta(hours=1)))
    submitting = submit(env.journal, env.markers, op).operation
    env.journal.record_observation(op.operation_id, observation_ordinal=1,
                                   acknowledgement_state=submitting.axes.acknowledgement_state,
                                   evidence_digest=digest("obs-1"), lease_owner="poller")
    with pytest.raises(Exception) as caught:  # observation ordinals are dense and monotonic
        env.journal.record_observation(op.operation_id, observation_ordinal=1,
                                       acknowledgement_state=submitting.axes.acknowledgement_state,
                                       evidence_digest=digest("obs-dup"), lease_owner="poller")
    assert "observation_ordinal_not_next" in str(caught.value)
    final = step(env.journal, step(env.journal, submitting, "sync_response_succeeded"), "verified_full")
    env.advance(timedelta(seconds=1))

    report = env.journal.apply_retention(observations_older_than=env.journal.now() + timedelta(seconds=1))

    assert report.observations_deleted == 1
    assert env.journal.list_observations(op.operation_id) == ()
    tombstone = env.journal.get_tombstone(op.operation_id)
    assert tombstone is not None
    assert tombstone.remote_effect is RemoteEffect.FULLY_APPLIED
    assert tombstone.verification_state is VerificationState.PASSED
    assert tombstone.mutation_intent_digest == final.descriptor.mutation_intent_digest
    assert len(env.journal.effect_intervals("domain-a")) == 1
    assert len(env.journal.list_attempts(op.operation_id)) == 1


def test_raising_the_map_merges_and_splits_only_through_touching_pieces(journal_env: JournalEnv) -> None:
    """Only pieces overlapping or touching the scope are rewritten; neighbours still merge."""
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)

    def apply(key: str, first: int, last: int, generation: GenerationKey) -> list[tuple[ScopeRange, GenerationKey]]:
        admitted = env.journal.admit_parent(
            admission(key, [child(0, day(first), day(last), key=f"{key}.c0", generation=generation)]))
        apply_fully(env.journal, env.markers, admitted.children[0])
        return [(i.scope, i.highest_applied_generation) for i in env.journal.effect_intervals("domain-a")]

    assert apply("a", 1, 8, GEN[1]) == [(ScopeRange(day(1), day(8)), GEN[1])]
    assert apply("b", 8, 15, GEN[1]) == [(ScopeRange(day(1), day(15)), GEN[1])]  # touching, same generation
    assert apply("c", 20, 22, GEN[1]) == [(ScopeRange(day(1), day(15)), GEN[1]), (ScopeRange(day(20), day(22)), GEN[1])]
    assert apply("d", 15, 20, GEN[1]) == [(ScopeRange(day(1), day(22)), GEN[1])]  # bridges both neighbours
    assert apply("e", 5, 10, GEN[2]) == [
        (ScopeRange(day(1), day(5)), GEN[1]), (ScopeRange(day(5), day(10)), GEN[2]),
        (ScopeRange(day(10), day(22)), GEN[1]),
    ]
