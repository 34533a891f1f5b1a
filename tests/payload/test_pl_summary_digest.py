"""The sink's summary digests, written from the receiver's published specification, agree with
the receiver's own implementation on every value kind (floats included) in both schemes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mock_receiver.canonical import encode_row as receiver_encode_row
from mock_receiver.canonical import multiset_digest, multiset_sum_digest
from sink.payload.summary_digest import MOCK_RECEIVER_ROWS_V1, MOCK_RECEIVER_ROWS_V2, RowsSum, rows_digest, rows_sum

values = st.one_of(st.none(), st.booleans(), st.integers(-2**60, 2**60), st.text(max_size=6),
                   st.floats(allow_nan=False, allow_infinity=False))
batches = st.lists(st.dictionaries(st.text(min_size=1, max_size=3), values, max_size=4), max_size=10)


@settings(max_examples=80, deadline=None)
@given(batches)
def test_both_schemes_agree_with_the_receiver(rows: list[dict[str, Any]]) -> None:
    encoded = [receiver_encode_row(row) for row in rows]
    assert rows_digest(rows, MOCK_RECEIVER_ROWS_V1) == multiset_digest(encoded)
    assert rows_digest(rows, MOCK_RECEIVER_ROWS_V2) == multiset_sum_digest(encoded)


@settings(max_examples=40, deadline=None)
@given(batches, st.integers(0, 10))
def test_v2_sums_of_parts_are_the_sum_of_the_whole(rows: list[dict[str, Any]], cut: int) -> None:
    assert (rows_sum(rows[:cut]) + rows_sum(rows[cut:])).digest() == rows_digest(rows, MOCK_RECEIVER_ROWS_V2)
    assert RowsSum(len(rows), int(rows_sum(rows).hex(), 16)) == rows_sum(rows)


def test_an_unknown_scheme_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown summary digest scheme"):
        rows_digest([], "mock-receiver.rows.v3")
