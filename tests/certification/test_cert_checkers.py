"""Each checker on its own: a valid history, the smallest invalid one, and its boundaries.

The histories are built by hand (cert_history_support) so each test changes exactly what one rule
reads: unknown request targets, a fence that matches but a receiver that does not deduplicate it,
empty days, claims per run against exit 0, surplus against foreign against missing rows, effects
outside the delivered scope, and each evidence gap alone.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from cert_history_support import DAY1, DAY2, DAYS, OUTSIDE, day, effect, history, request, run, snap

from certification.checkers import (
    SAFETY_CHECKERS,
    SAFETY_COUNTERS,
    CheckResult,
    Counters,
    Status,
    check_all,
    checkpoint_gaps,
    compose,
    duplicates,
    evidence_complete,
    false_successes,
    out_of_scope,
    silent_losses,
    unproved_resends,
    wrong_content,
)
from certification.history import Completeness, RunKind

# --- the clean delivery ---------------------------------------------------------------------------


def test_a_clean_delivery_is_valid_for_every_checker() -> None:
    results = check_all(history())
    assert [result.name for result in results] == ["evidence", *SAFETY_COUNTERS]
    assert all(result == CheckResult(result.name, Status.VALID, 0, ()) for result in results)
    assert compose(results) is Status.VALID
    assert Counters.of(results).safe


def test_the_safety_checkers_are_listed_in_counter_order() -> None:
    assert [checker.__name__ for checker in SAFETY_CHECKERS] == list(SAFETY_COUNTERS)
    assert SAFETY_COUNTERS == ("duplicates", "false_successes", "unproved_resends", "silent_losses",
                               "out_of_scope", "wrong_content", "checkpoint_gaps")


# --- compose ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("statuses", "expected"), [
    ((), Status.VALID),
    ((Status.VALID,), Status.VALID),
    ((Status.VALID, Status.UNKNOWN), Status.UNKNOWN),
    ((Status.UNKNOWN, Status.VALID), Status.UNKNOWN),
    ((Status.UNKNOWN, Status.INVALID, Status.VALID), Status.INVALID),
    ((Status.INVALID, Status.UNKNOWN), Status.INVALID),
    ((Status.VALID, Status.INVALID), Status.INVALID),
])
def test_compose_is_invalid_over_unknown_over_valid(statuses: tuple[Status, ...], expected: Status) -> None:
    assert compose([CheckResult(f"c{i}", status) for i, status in enumerate(statuses)]) is expected


# --- evidence -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("completeness", "reason"), [
    (Completeness(proxy_log_dropped=2), "the proxy's log dropped 2 entr(y/ies)"),
    (Completeness(tap_overflow=True), "the wire tap kept only part of a connection's bytes"),
    (Completeness(ledger_read=False), "the receiver's ground truth could not be read"),
    (Completeness(unmatched_proxy_entries=1), "1 proxy log entr(y/ies) match no recorded client request"),
    (Completeness(receiver_in_flight=1), "the receiver was still working on 1 request(s) when its ledger was read"),
])
def test_each_evidence_gap_alone_makes_the_row_unknown(completeness: Completeness, reason: str) -> None:
    result = evidence_complete(history(completeness=completeness))
    assert result == CheckResult("evidence", Status.UNKNOWN, 0, (reason,))


def test_a_history_without_any_snapshot_is_unknown() -> None:
    assert evidence_complete(history(snapshots=())) == CheckResult(
        "evidence", Status.UNKNOWN, 0, ("no snapshot of the receiver's content",))


def test_every_gap_is_named() -> None:
    gaps = Completeness(proxy_log_dropped=1, tap_overflow=True, ledger_read=False, unmatched_proxy_entries=3,
                        receiver_in_flight=2)
    result = evidence_complete(history(completeness=gaps, snapshots=()))
    assert result.status is Status.UNKNOWN and len(result.reasons) == 6 and result.count == 0


def test_an_evidence_gap_is_unknown_never_valid_even_with_clean_counters() -> None:
    results = check_all(history(completeness=Completeness(proxy_log_dropped=1)))
    assert compose(results) is Status.UNKNOWN
    assert Counters.of(results).safe  # the counters alone would have passed it


# --- duplicates -------------------------------------------------------------------------------------------


def test_a_partition_replaced_twice_is_a_duplicate_without_any_key() -> None:
    result = duplicates(history(effects=(effect(1, DAYS), effect(2, (DAY2,)))))
    assert result == CheckResult("duplicates", Status.INVALID, 1, (f"effect 2 re-applied {DAY2}",))


def test_an_overlap_names_every_day_applied_again_in_order() -> None:
    result = duplicates(history(effects=(effect(1, DAYS), effect(7, (DAY2, DAY1)))))
    assert result.reasons == (f"effect 7 re-applied {DAY1}, {DAY2}",)


def test_effects_on_disjoint_days_are_no_duplicate() -> None:
    assert duplicates(history(effects=(effect(1, (DAY1,)), effect(2, (DAY2,))))).status is Status.VALID


def test_an_effect_whose_days_are_unknown_applies_nothing_twice() -> None:
    assert duplicates(history(effects=(effect(1, ()), effect(2, ()), effect(3, DAYS)))).status is Status.VALID


def test_appends_to_one_day_are_not_duplicates_by_day() -> None:
    result = duplicates(history(mutation_kind="incremental_append", effects=(effect(1, (DAY1,)), effect(2, (DAY1,)))))
    assert result.status is Status.VALID


def test_the_same_fence_key_applied_twice_is_a_duplicate_whatever_its_days() -> None:
    appended = (effect(1, (DAY1,), fence="k"), effect(2, (DAY2,), fence="k"))
    assert duplicates(history(mutation_kind="incremental_append", effects=appended)).reasons == (
        "effect 2 applied a fence key a second time",)
    assert duplicates(history(effects=appended)).count == 1  # disjoint days, one key: still twice


def test_a_partition_replaced_twice_under_one_key_counts_once() -> None:
    twice = (effect(1, (DAY1,), fence="k"), effect(2, (DAY1,), fence="k"))
    assert duplicates(history(effects=twice)).reasons == (f"effect 2 re-applied {DAY1}",)


def test_effects_without_a_fence_share_no_key() -> None:
    result = duplicates(history(mutation_kind="incremental_append", effects=(effect(1, (DAY1,)), effect(2, (DAY2,)))))
    assert result.status is Status.VALID


def test_surplus_rows_once_settled_are_duplicates() -> None:
    settled = snap(0, day(DAY1, surplus=2), day(DAY2))
    result = duplicates(history(snapshots=(snap(1), settled)))
    assert result == CheckResult("duplicates", Status.INVALID, 1, (f"{DAY1}: 2 row(s) applied more than once",))


def test_surplus_before_settling_is_not_judged_by_duplicates() -> None:
    # A surplus the receiver no longer holds once settled is no duplicate (a later replacement fixed it).
    result = duplicates(history(snapshots=(snap(1, day(DAY1, surplus=3), day(DAY2)), snap(0))))
    assert result.status is Status.VALID


def test_missing_or_foreign_rows_are_not_duplicates() -> None:
    settled = snap(0, day(DAY1, missing=1), day(DAY2, foreign=2))
    assert duplicates(history(snapshots=(settled,))).status is Status.VALID


def test_without_a_settled_snapshot_only_effects_count() -> None:
    assert duplicates(history(snapshots=(snap(1, day(DAY1, surplus=3)),))).status is Status.VALID


# --- out of scope -----------------------------------------------------------------------------------------


def test_an_effect_outside_the_universe_is_out_of_scope() -> None:
    result = out_of_scope(history(effects=(effect(1, (DAY1,)), effect(2, (DAY2, OUTSIDE, "2026-02-28")))))
    assert result == CheckResult("out_of_scope", Status.INVALID, 1,
                                 ("effect 2 changed 2026-02-28, 2026-04-01 outside the scope",))


def test_rows_held_outside_the_scope_count_once_at_their_worst() -> None:
    snapshots = (snap(1, outside=2), snap(2, outside=5), snap(0, outside=1))
    result = out_of_scope(history(snapshots=snapshots))
    assert result == CheckResult("out_of_scope", Status.INVALID, 1, ("5 row(s) held outside the delivered scope",))


def test_effects_and_rows_inside_the_scope_are_valid() -> None:
    assert out_of_scope(history(effects=(effect(1, DAYS),))).status is Status.VALID
    assert out_of_scope(history(snapshots=())).status is Status.VALID


# --- wrong content ----------------------------------------------------------------------------------------


def test_rows_unlike_any_source_row_are_wrong_content_per_moment() -> None:
    snapshots = (snap(1, day(DAY1, foreign=1), day(DAY2)), snap(0, day(DAY1), day(DAY2, foreign=2)))
    result = wrong_content(history(snapshots=snapshots))
    assert result == CheckResult("wrong_content", Status.INVALID, 2, (
        f"{DAY1} (after run 1): 1 row(s) unlike any source row",
        f"{DAY2} (settled): 2 row(s) unlike any source row",
    ))


def test_the_same_reason_twice_counts_once() -> None:
    snapshots = (snap(1, day(DAY1, foreign=1)), snap(1, day(DAY1, foreign=1)))
    assert wrong_content(history(snapshots=snapshots)).count == 1


def test_missing_and_surplus_rows_are_not_wrong_content() -> None:
    snapshots = (snap(1, day(DAY1, missing=2), day(DAY2, surplus=1)),)
    assert wrong_content(history(snapshots=snapshots)).status is Status.VALID


# --- false successes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("state", "detail"), [
    (day(DAY1, missing=2), "the receiver held 1 of 3 row(s) (2 missing, 0 unlike the source)"),
    (day(DAY1, foreign=1, missing=1), "the receiver held 3 of 3 row(s) (1 missing, 1 unlike the source)"),
    (day(DAY1, surplus=1), "the receiver held 4 of 3 row(s) (0 missing, 0 unlike the source)"),
])
def test_a_day_called_completed_that_the_receiver_did_not_hold_exactly_is_a_false_success(
        state, detail: str) -> None:
    h = history(runs=(run(1, 4, claims={DAY1: "completed"}),), snapshots=(snap(1, state, day(DAY2)),))
    assert false_successes(h) == CheckResult("false_successes", Status.INVALID, 1,
                                             (f"run 1 called {DAY1} completed; {detail}",))


@pytest.mark.parametrize("claim", ["unknown", "partial", "failed"])
def test_an_honest_claim_other_than_completed_is_no_false_success(claim: str) -> None:
    h = history(runs=(run(1, 4, claims={DAY1: claim}),), snapshots=(snap(1, day(DAY1, missing=3), day(DAY2)),))
    assert false_successes(h).status is Status.VALID
    assert silent_losses(h).status is Status.VALID  # exit 4 claims nothing either


def test_a_claim_is_judged_against_the_snapshot_right_after_its_own_run() -> None:
    runs = (run(1, 4, claims={DAY1: "completed"}), run(2, 0, claims={DAY1: "completed"}))
    snapshots = (snap(1, day(DAY1, missing=3), day(DAY2)), snap(2), snap(0))
    result = false_successes(history(runs=runs, snapshots=snapshots))
    assert result.count == 1 and result.reasons[0].startswith(f"run 1 called {DAY1} completed")
    # A later run fixing the day does not excuse the earlier claim; an earlier gap does not taint a later claim.
    fixed_later = (snap(1), snap(2, day(DAY1, missing=1), day(DAY2)), snap(0))
    assert false_successes(history(runs=runs, snapshots=fixed_later)).reasons[0].startswith("run 2 called")


def test_a_completed_claim_of_an_empty_day_that_stayed_empty_is_true() -> None:
    empty = snap(1, day(DAY1, expected=0), day(DAY2))
    h = history(runs=(run(1, 0, claims={DAY1: "completed", DAY2: "completed"}),), snapshots=(empty, snap(0)))
    assert false_successes(h).status is Status.VALID and silent_losses(h).status is Status.VALID


def test_exit_zero_alone_is_no_explicit_claim() -> None:
    h = history(runs=(run(1, 0),), snapshots=(snap(1, day(DAY1, foreign=1), day(DAY2)),))
    assert false_successes(h).status is Status.VALID  # judged by wrong_content and silent_losses instead


def test_a_claim_without_a_snapshot_of_its_day_is_not_judged_here() -> None:
    claims = {DAY1: "completed", OUTSIDE: "completed"}
    assert false_successes(history(runs=(run(1, 0, claims=claims),), snapshots=(snap(0),))).status is Status.VALID
    assert false_successes(history(runs=(run(1, 0, claims=claims),), snapshots=(snap(1, day(DAY2)),))).count == 0


# --- silent losses ----------------------------------------------------------------------------------------


def test_exit_zero_while_a_day_lacks_rows_is_a_silent_loss() -> None:
    h = history(runs=(run(1, 0),), snapshots=(snap(1, day(DAY1), day(DAY2, missing=2)),))
    assert silent_losses(h) == CheckResult("silent_losses", Status.INVALID, 1,
                                           (f"run 1 exited 0 while {DAY2} lacked 2 row(s)",))


def test_a_non_zero_exit_claims_no_day() -> None:
    for code in (3, 4, 5, 1, -9):
        h = history(runs=(run(1, code),), snapshots=(snap(1, day(DAY1, missing=3), day(DAY2, missing=3)),))
        assert silent_losses(h).status is Status.VALID


def test_a_day_explicitly_called_completed_is_a_false_success_not_a_silent_loss() -> None:
    h = history(runs=(run(1, 0, claims={DAY1: "completed"}),),
                snapshots=(snap(1, day(DAY1, missing=1), day(DAY2, missing=1)),))
    assert false_successes(h).reasons == (f"run 1 called {DAY1} completed; the receiver held 2 of 3 row(s) "
                                          "(1 missing, 0 unlike the source)",)
    assert silent_losses(h).reasons == (f"run 1 exited 0 while {DAY2} lacked 1 row(s)",)


def test_exit_zero_claims_a_day_the_sink_called_unknown() -> None:
    # An orchestrator reads exit 0 as "done": a day reported unknown in a run that exited 0 is claimed.
    h = history(runs=(run(1, 0, claims={DAY1: "unknown"}),), snapshots=(snap(1, day(DAY1, missing=3), day(DAY2)),))
    assert silent_losses(h).count == 1 and false_successes(h).count == 0


def test_claims_are_made_per_run() -> None:
    runs = (run(1, 0), run(2, 4), run(3, 0))
    snapshots = (snap(1, day(DAY1, missing=1), day(DAY2)), snap(2, day(DAY1, missing=3), day(DAY2)),
                 snap(3, day(DAY1), day(DAY2, missing=1)), snap(0))
    assert silent_losses(history(runs=runs, snapshots=snapshots)).reasons == (
        f"run 1 exited 0 while {DAY1} lacked 1 row(s)", f"run 3 exited 0 while {DAY2} lacked 1 row(s)")


def test_surplus_or_foreign_rows_are_no_silent_loss() -> None:
    h = history(runs=(run(1, 0),), snapshots=(snap(1, day(DAY1, surplus=1), day(DAY2, foreign=1)),))
    assert silent_losses(h).status is Status.VALID


def test_a_run_without_its_snapshot_is_not_judged_for_losses() -> None:
    assert silent_losses(history(runs=(run(1, 0),), snapshots=(snap(0, day(DAY1, missing=3)),))).count == 0


def test_an_operator_steps_exit_zero_claims_no_day() -> None:
    # It says its reconciliation worked, not that the delivery is done.
    runs = (run(1, 4), run(2, 0, kind=RunKind.OPERATOR, claims={DAY1: "completed"}))
    snapshots = (snap(1, day(DAY1, missing=3), day(DAY2)), snap(2, day(DAY1, missing=3), day(DAY2)))
    h = history(runs=runs, snapshots=snapshots)
    assert silent_losses(h).status is Status.VALID and false_successes(h).status is Status.VALID
    delivery = history(runs=(run(1, 4), run(2, 0, kind=RunKind.RECOVERY)), snapshots=snapshots)
    assert silent_losses(delivery).count == 1


# --- checkpoint gaps ------------------------------------------------------------------------------------


def test_a_checkpoint_past_a_day_the_receiver_lacks_is_a_gap() -> None:
    h = history(runs=(replace(run(1, 4), checkpoint=DAY2),), snapshots=(snap(1, day(DAY1, missing=1), day(DAY2)),))
    assert checkpoint_gaps(h) == CheckResult("checkpoint_gaps", Status.INVALID, 1, (
        f"run 1 moved its checkpoint to {DAY2} past {DAY1}, which the receiver did not hold exactly",))


def test_a_checkpoint_names_every_day_it_passed_that_was_not_exact() -> None:
    third = "2026-03-03"
    snapshot = snap(1, day(DAY1, surplus=1), day(DAY2, foreign=1), day(third, missing=2))
    h = history(universe=(DAY1, DAY2, third), runs=(replace(run(1, 0), checkpoint="2026-03-04"),),
                snapshots=(snapshot,))
    assert checkpoint_gaps(h).reasons == (f"run 1 moved its checkpoint to 2026-03-04 past {DAY1}, {DAY2}, {third}, "
                                          "which the receiver did not hold exactly",)


def test_the_checkpoint_day_itself_and_later_days_are_not_claimed() -> None:
    h = history(runs=(replace(run(1, 4), checkpoint=DAY2),), snapshots=(snap(1, day(DAY1), day(DAY2, missing=3)),))
    assert checkpoint_gaps(h).status is Status.VALID


def test_no_checkpoint_or_no_snapshot_claims_nothing() -> None:
    lacking = (snap(1, day(DAY1, missing=1), day(DAY2)),)
    assert checkpoint_gaps(history(runs=(run(1, 0),), snapshots=lacking)).status is Status.VALID
    assert checkpoint_gaps(history(runs=(replace(run(1, 0), checkpoint=DAY2),), snapshots=(snap(0),))).count == 0


def test_each_run_is_judged_on_its_own_checkpoint() -> None:
    runs = (replace(run(1, 4), checkpoint=DAY2), run(2, 0), replace(run(3, 0), checkpoint=DAY2))
    snapshots = (snap(1), snap(2, day(DAY1, missing=1), day(DAY2)), snap(3, day(DAY1, missing=1), day(DAY2)))
    assert checkpoint_gaps(history(runs=runs, snapshots=snapshots)).reasons == (
        f"run 3 moved its checkpoint to {DAY2} past {DAY1}, which the receiver did not hold exactly",)


# --- unproved resends -------------------------------------------------------------------------------------


def test_one_request_per_day_is_no_resend() -> None:
    assert unproved_resends(history()).status is Status.VALID


def test_a_second_request_for_a_day_without_a_fence_is_unproved() -> None:
    h = history(requests=(request(1, (DAY1,)), request(2, (DAY1,), run_index=2)))
    assert unproved_resends(h) == CheckResult("unproved_resends", Status.INVALID, 1, (
        f"request 2 (run 2) resent {DAY1} after request 1 without proof: no fence",))


def test_a_resend_with_the_same_fence_to_a_deduplicating_receiver_is_proven() -> None:
    h = history(requests=(request(1, (DAY1,), fence="k"), request(2, (DAY1,), fence="k")))
    assert unproved_resends(h).status is Status.VALID


def test_the_same_fence_to_a_receiver_that_does_not_deduplicate_proves_nothing() -> None:
    h = history(fence_deduplicates=False, requests=(request(1, (DAY1,), fence="k"), request(2, (DAY1,), fence="k")))
    assert unproved_resends(h).reasons == (
        f"request 2 (run 1) resent {DAY1} after request 1 without proof: a fence the receiver does not deduplicate",)


def test_a_fresh_fence_per_attempt_is_unproved() -> None:
    h = history(requests=(request(1, (DAY1,), fence="k1"), request(2, (DAY1,), fence="k2")))
    assert unproved_resends(h).reasons == (
        f"request 2 (run 1) resent {DAY1} after request 1 without proof: another fence value",)


def test_a_fenced_resend_after_an_unfenced_request_is_unproved() -> None:
    h = history(requests=(request(1, (DAY1,)), request(2, (DAY1,), fence="k")))
    assert unproved_resends(h).reasons[0].endswith("without proof: another fence value")


def test_a_fenced_resend_needs_the_same_fence_as_every_earlier_request_for_its_days() -> None:
    requests = (request(1, (DAY1,), fence="k"), request(2, (DAY1,), fence="k2"), request(3, (DAY1,), fence="k"))
    result = unproved_resends(history(requests=requests))
    assert result.count == 2
    assert result.reasons[1] == f"request 3 (run 1) resent {DAY1} after request 2 without proof: another fence value"


def test_a_request_after_one_whose_body_never_left_the_sink_whole_resends_nothing() -> None:
    # The worker died after the head (async.failpoint.http.submit.after_headers_sent): the fence,
    # in the multipart body, never reached the wire, and no receiver could apply the request.
    h = history(requests=(request(1, None, body_complete=False), request(2, (DAY1,), fence="k", run_index=2)))
    assert unproved_resends(h).status is Status.VALID


def test_a_whole_request_before_a_cut_one_still_needs_proof_for_what_follows() -> None:
    requests = (request(1, (DAY1,), fence="k1"), request(2, None, body_complete=False),
                request(3, (DAY1,), fence="k2", run_index=2))
    assert unproved_resends(history(requests=requests)).reasons == (
        "request 2 (run 1) resent unknown days after request 1 without proof: no fence",
        f"request 3 (run 2) resent {DAY1} after request 1 without proof: another fence value")


def test_a_cut_request_after_a_whole_one_is_itself_a_resend() -> None:
    # What left whole first could have been applied: a later attempt, even one cut short, resent it.
    requests = (request(1, (DAY1,)), request(2, (DAY1,), body_complete=False))
    assert unproved_resends(history(requests=requests)).count == 1


def test_each_resend_counts_once_however_many_requests_came_before() -> None:
    requests = tuple(request(seq, (DAY1,)) for seq in (1, 2, 3))
    assert unproved_resends(history(requests=requests)).reasons == (
        f"request 2 (run 1) resent {DAY1} after request 1 without proof: no fence",
        f"request 3 (run 1) resent {DAY1} after request 1 without proof: no fence",
    )


@pytest.mark.parametrize(("first", "second"), [(None, (DAY1,)), ((DAY2,), None), (None, None)])
def test_unknown_targets_may_be_any_day(first, second) -> None:
    result = unproved_resends(history(requests=(request(1, first), request(2, second))))
    assert result.count == 1


def test_unknown_targets_are_named_as_such() -> None:
    result = unproved_resends(history(requests=(request(1, (DAY1,)), request(2, None))))
    assert result.reasons == ("request 2 (run 1) resent unknown days after request 1 without proof: no fence",)


def test_requests_for_other_days_or_for_no_day_overlap_nothing() -> None:
    assert unproved_resends(history(requests=(request(1, (DAY1,)), request(2, (DAY2,))))).status is Status.VALID
    # A malformed range the receiver refuses changes no day at all.
    assert unproved_resends(history(requests=(request(1, ()), request(2, (DAY1,))))).status is Status.VALID
    assert unproved_resends(history(requests=(request(1, (DAY1,)), request(2, ())))).status is Status.VALID


def test_a_request_spanning_days_overlaps_each_of_them() -> None:
    result = unproved_resends(history(requests=(request(1, DAYS), request(2, (DAY2,)))))
    assert result.reasons == (f"request 2 (run 1) resent {DAY2} after request 1 without proof: no fence",)


def test_order_is_by_time_then_sequence() -> None:
    # Request 5 left the sink first: the resend is request 2, whatever the sequence numbers say.
    late_seq = history(requests=(request(2, (DAY1,), at=9.0), request(5, (DAY1,), at=1.0)))
    assert unproved_resends(late_seq).reasons[0].startswith("request 2 (run 1) resent")
    same_time = history(requests=(request(4, (DAY1,), at=3.0), request(3, (DAY1,), at=3.0)))
    assert unproved_resends(same_time).reasons[0].startswith("request 4 (run 1) resent")


def test_only_mutation_requests_count() -> None:
    polls = (request(1, (DAY1,), endpoint="job_poll"), request(2, (DAY1,), endpoint="summary"),
             request(3, (DAY1,), endpoint="async_submit"))
    assert unproved_resends(history(requests=polls)).status is Status.VALID
    with_two = (*polls, request(4, (DAY1,), endpoint="sync_submit"))
    assert unproved_resends(history(requests=with_two)).reasons[0].startswith("request 4 (run 1) resent")


# --- counters ---------------------------------------------------------------------------------------------


def test_counters_take_each_safety_checkers_count_and_ignore_the_rest() -> None:
    results = [CheckResult(name, Status.INVALID, index + 1) for index, name in enumerate(SAFETY_COUNTERS)]
    results.append(CheckResult("evidence", Status.UNKNOWN, 9))
    results.append(CheckResult("exercise", Status.INVALID, 9))
    counters = Counters.of(results)
    assert counters.as_dict() == {"duplicates": 1, "false_successes": 2, "unproved_resends": 3,
                                  "silent_losses": 4, "out_of_scope": 5, "wrong_content": 6, "checkpoint_gaps": 7}
    assert Counters.of([]) == Counters(0, 0, 0, 0, 0, 0, 0)


@pytest.mark.parametrize("name", SAFETY_COUNTERS)
def test_each_counter_alone_makes_the_row_unsafe(name: str) -> None:
    counters = replace(Counters(0, 0, 0, 0), **{name: 1})
    assert counters.safe is False
    assert Counters(0, 0, 0, 0).safe is True
