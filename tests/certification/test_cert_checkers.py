"""Each checker counts its violation, and only its own (shown on the histories the naive sinks and
the reference sink produce on the canonical faults)."""

from __future__ import annotations

from certification.checkers import check, duplicate_mutations, false_successes, silent_losses, unproved_resends
from certification.history import AppliedEffect, EventKind, History, MutationRequest, SinkReport


def req(seq: int, unit: str = "u1", *, fence: str | None = None, started: bool = True, forwarded: bool = True,
        delivered: bool = True) -> MutationRequest:
    return MutationRequest(seq=seq, at=float(seq), unit=unit, fence_key=fence, bytes_from_sink=started,
                           forwarded=forwarded, response_delivered=delivered)


def eff(seq: int, unit: str = "u1", *, fence: str | None = None, digest: str = "d1", rows: int = 3) -> AppliedEffect:
    return AppliedEffect(seq=seq, at=float(seq) + 0.5, unit=unit, fence_key=fence, payload_digest=digest, rows=rows)


def hist(requests, effects, reports, *, units=None, fenced=False) -> History:
    return History(row_id="r", expected_units=units or {"u1": 3}, requests=tuple(requests), effects=tuple(effects),
                   reports=tuple(reports), fenced_receiver=fenced)


def test_a_clean_delivery_has_no_violation() -> None:
    counters = check(hist([req(1)], [eff(1)], [SinkReport(0, {"u1": "completed"})]))
    assert counters.safe and counters.as_dict() == dict.fromkeys(counters.as_dict(), 0)


def test_naive_retry_after_commit_then_cut_is_a_duplicate_and_an_unproved_resend() -> None:
    history = hist([req(1, delivered=False), req(2)], [eff(1), eff(2)], [SinkReport(0)])
    counters = check(history)
    assert counters.duplicates == 1
    assert counters.unproved_resends == 1
    assert counters.false_successes == 0 and counters.silent_losses == 0


def test_duplicates_are_found_without_any_key() -> None:
    # Same unit, two effects, no fence key: the unit and payload views still count them.
    assert duplicate_mutations(hist([], [eff(1), eff(2)], [])) == 1
    # Different units carrying the same payload bytes (a sink that re-labels a resend) still count.
    assert duplicate_mutations(hist([], [eff(1, "u1"), eff(2, "u2")], [], units={"u1": 3, "u2": 3})) == 1
    # One fence key applied twice counts even when the units differ.
    assert duplicate_mutations(hist([], [eff(1, "u1", fence="k", digest="a"), eff(2, "u2", fence="k", digest="b")],
                                    [], units={"u1": 3, "u2": 3})) == 1
    # Rows applied beyond what the unit carries (one effect holding the rows twice).
    assert duplicate_mutations(hist([], [eff(1, rows=6)], [])) == 1
    assert duplicate_mutations(hist([], [eff(1)], [])) == 0


def test_a_resend_after_a_cut_before_forwarding_is_still_unproved() -> None:
    # The proxy received the head and cut without forwarding: ground truth has no effect, but the
    # sink could not know that, so resending was a gamble.
    history = hist([req(1, forwarded=False, delivered=False), req(2)], [eff(2)], [SinkReport(0)])
    assert unproved_resends(history) == 1
    assert duplicate_mutations(history) == 0


def test_a_resend_after_a_refused_connection_is_proven_safe() -> None:
    history = hist([req(1, started=False, forwarded=False, delivered=False), req(2)], [eff(2)], [SinkReport(0)])
    assert unproved_resends(history) == 0
    assert history.events()[1].kind is EventKind.FAIL


def test_a_same_key_resend_is_proven_only_by_a_certified_fence() -> None:
    requests = [req(1, fence="k", delivered=False), req(2, fence="k")]
    assert unproved_resends(hist(requests, [eff(1, fence="k")], [SinkReport(0)], fenced=True)) == 0
    assert unproved_resends(hist(requests, [eff(1, fence="k")], [SinkReport(0)], fenced=False)) == 1
    changed = [req(1, fence="k", delivered=False), req(2, fence="k2")]
    assert unproved_resends(hist(changed, [eff(1, fence="k")], [SinkReport(0)], fenced=True)) == 1


def test_success_without_the_effect_is_a_false_success_and_a_silent_loss() -> None:
    history = hist([req(1, forwarded=False, delivered=False)], [], [SinkReport(0, {"u1": "completed"})])
    assert false_successes(history) == 1
    assert silent_losses(history) == 1


def test_an_honest_unknown_is_no_false_success() -> None:
    history = hist([req(1, delivered=False)], [eff(1)], [SinkReport(4, {"u1": "unknown"})])
    assert check(history).safe


def test_partial_application_reported_complete_is_a_false_success() -> None:
    history = hist([req(1)], [eff(1, rows=2)], [SinkReport(0, {"u1": "completed"})])
    assert false_successes(history) == 1
    assert silent_losses(history) == 0


def test_a_later_recovery_run_decides_the_final_claim() -> None:
    reports = [SinkReport(4, {"u1": "unknown"}), SinkReport(0, {"u1": "completed"})]
    assert false_successes(hist([req(1, delivered=False)], [], reports)) == 1
    assert false_successes(hist([req(1, delivered=False)], [eff(1)], reports)) == 0


def test_the_history_digest_binds_every_event() -> None:
    base = hist([req(1)], [eff(1)], [SinkReport(0)])
    assert base.digest() == hist([req(1)], [eff(1)], [SinkReport(0)]).digest()
    assert base.digest() != hist([req(1, delivered=False)], [eff(1)], [SinkReport(0)]).digest()
    assert base.digest() != hist([req(1)], [eff(1, rows=2)], [SinkReport(0)]).digest()
