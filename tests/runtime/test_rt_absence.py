"""When a certified read-only summary proves exact absence (absence.py): nothing of the delivery is
at the receiver, and nothing sent earlier can still be applied."""

from __future__ import annotations

import pytest
from rt_support import SYNC_PROFILE, no_fence, profile

from sink.runtime.absence import proves_absence
from sink.runtime.verification import ExpectedDelivery, ReceiverSummary

FENCED = profile(SYNC_PROFILE)
UNFENCED = no_fence(SYNC_PROFILE)
EXPECTED = ExpectedDelivery(rows=3, content_digest="sha256:" + "ab" * 32)
EMPTY = ReceiverSummary(row_count=0, content_digest="sha256:" + "00" * 32)
TOTAL = UNFENCED.timeouts.operation_total_ms


def test_an_empty_scope_proves_absence_under_a_certified_fence_at_once() -> None:
    assert proves_absence(EMPTY, EXPECTED, profile=FENCED, last_attempt_age_ms=0)
    assert proves_absence(EMPTY, EXPECTED, profile=FENCED, last_attempt_age_ms=None)


@pytest.mark.parametrize("summary", [None, ReceiverSummary(row_count=1, content_digest="sha256:" + "00" * 32),
                                     ReceiverSummary(row_count=3, content_digest="sha256:" + "ab" * 32)])
def test_no_summary_or_rows_in_the_scope_prove_nothing(summary: ReceiverSummary | None) -> None:
    # Rows there may be an older generation or part of this one: never "absent".
    assert not proves_absence(summary, EXPECTED, profile=FENCED, last_attempt_age_ms=10**9)


def test_an_empty_payload_cannot_be_told_apart_from_absence() -> None:
    assert not proves_absence(EMPTY, ExpectedDelivery(rows=0), profile=FENCED, last_attempt_age_ms=10**9)


def test_without_a_fence_absence_needs_the_last_attempt_beyond_the_operation_bound() -> None:
    assert not proves_absence(EMPTY, EXPECTED, profile=UNFENCED, last_attempt_age_ms=None)
    assert not proves_absence(EMPTY, EXPECTED, profile=UNFENCED, last_attempt_age_ms=0)
    assert not proves_absence(EMPTY, EXPECTED, profile=UNFENCED, last_attempt_age_ms=TOTAL)
    assert proves_absence(EMPTY, EXPECTED, profile=UNFENCED, last_attempt_age_ms=TOTAL + 1)


def test_a_one_row_payload_absent_from_an_empty_scope_is_proven_absent() -> None:
    assert proves_absence(EMPTY, ExpectedDelivery(rows=1), profile=FENCED, last_attempt_age_ms=0)
