"""The SQLite journal's stored instants: one fixed shape, read back to the same UTC instant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sink.journal.sqlite.codec import decode_time, encode_time


@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 30),  # a journal clock
                    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)),
                                               timezone(timedelta(hours=-11))])))
def test_every_encoded_instant_reads_back_the_same_in_utc(value: datetime) -> None:
    decoded = decode_time(encode_time(value))
    assert decoded == value
    assert decoded.tzinfo is UTC


@pytest.mark.parametrize("stored", [
    "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000", "2026-02-30T00:00:00.000000Z",
    "2026-01-01T00:00:00.000000Z\n", "2026-01-01T00:00:00.000000+00:00", "2026-01-01 00:00:00.000000Z",
    "2026-01-01T00:00:00.0000000Z", "2026-01-01T24:00:00.000000Z", "",
])
def test_any_other_stored_shape_is_refused(stored: str) -> None:
    with pytest.raises(ValueError):
        decode_time(stored)
