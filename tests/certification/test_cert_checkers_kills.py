"""Kill tests for certification/checkers.py (mutation gate, tools/mutation): each counter alone
makes a row unsafe and keeps its name, each duplicate view counts alone, and each part of the
false-success, silent-loss and unproved-resend rules decides on its own."""

from __future__ import annotations

import pytest

from certification.checkers import Counters, duplicate_mutations, false_successes, silent_losses, unproved_resends
from certification.history import AppliedEffect, History, MutationRequest, SinkReport


def req(seq: int, unit: str = "u1", *, fence: str | None = None) -> MutationRequest:
    return MutationRequest(seq=seq, at=float(seq), unit=unit, fence_key=fence, bytes_from_sink=True,
                           forwarded=True, response_delivered=False)


def eff(seq: int, unit: str = "u1", *, digest: str = "d1", rows: int = 3) -> AppliedEffect:
    return AppliedEffect(seq=seq, at=float(seq) + 0.5, unit=unit, fence_key=None, payload_digest=digest, rows=rows)


def hist(requests: list[MutationRequest], effects: list[AppliedEffect], reports: list[SinkReport], *,
         units: dict[str, int] | None = None, fenced: bool = False) -> History:
    return History(row_id="r", expected_units={"u1": 3} if units is None else units, requests=tuple(requests),
                   effects=tuple(effects), reports=tuple(reports), fenced_receiver=fenced)


@pytest.mark.parametrize("index", range(4))
def test_each_counter_alone_makes_the_row_unsafe(index: int) -> None:
    values = [0, 0, 0, 0]
    values[index] = 1
    assert Counters(*values).safe is False
    assert Counters(0, 0, 0, 0).safe is True


def test_counters_keep_their_names() -> None:
    assert Counters(1, 2, 3, 4).as_dict() == {"duplicates": 1, "false_successes": 2, "unproved_resends": 3,
                                              "silent_losses": 4}


def test_the_unit_view_alone_counts_a_second_effect() -> None:
    # Two effects for one unit, different payload bytes, no key, rows within the unit: only the unit view sees it.
    history = hist([], [eff(1, digest="a"), eff(2, digest="b")], [], units={"u1": 6})
    assert duplicate_mutations(history) == 1


def test_doubled_rows_are_judged_only_for_units_with_a_known_row_count() -> None:
    assert duplicate_mutations(hist([], [eff(1, "u9", digest="a", rows=9)], [])) == 0  # not an expected unit
    assert duplicate_mutations(hist([], [eff(1, rows=9)], [], units={"u1": 0})) == 0  # no row count to exceed


def test_no_report_or_a_failing_exit_claims_nothing() -> None:
    assert silent_losses(hist([req(1)], [], [])) == 0
    assert false_successes(hist([req(1)], [], [])) == 0
    assert silent_losses(hist([req(1)], [], [SinkReport(4)])) == 0


def test_a_unit_left_out_of_a_successful_report_is_claimed() -> None:
    assert false_successes(hist([req(1)], [], [SinkReport(0)])) == 1
    # Without a final exit 0 an unnamed unit is not claimed.
    assert false_successes(hist([req(1)], [], [SinkReport(4)])) == 0


def test_a_unit_the_report_names_is_judged_by_its_own_outcome() -> None:
    # Exit 0 overall, but the report says this unit is unknown: no claim, so no false success.
    assert false_successes(hist([req(1)], [], [SinkReport(0, {"u1": "unknown"})])) == 0
    assert false_successes(hist([req(1)], [], [SinkReport(4, {"u1": "unknown"})])) == 0


def test_a_claimed_unit_never_applied_is_false_even_with_zero_expected_rows() -> None:
    history = hist([req(1)], [], [SinkReport(0, {"u1": "completed"})], units={"u1": 0})
    assert false_successes(history) == 1


def test_a_fenced_receiver_proves_nothing_for_requests_without_a_key() -> None:
    assert unproved_resends(hist([req(1), req(2)], [], [], fenced=True)) == 1


def test_a_fenced_resend_needs_the_same_key_as_every_earlier_request() -> None:
    requests = [req(1, fence="k"), req(2, fence="k2"), req(3, fence="k")]
    assert unproved_resends(hist(requests, [], [], fenced=True)) == 2
