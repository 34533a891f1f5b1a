"""The freeze's per-day spill: rows come back sorted, every byte kept, and a truncated file is an
error, never a shorter row."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sink.source import freeze
from sink.source.freeze import _Spill

DAY = date(2026, 7, 1)


@settings(max_examples=60)
@given(st.lists(st.binary(max_size=300), max_size=200))
def test_rows_come_back_sorted_and_whole(tmp_path_factory: pytest.TempPathFactory, rows: list[bytes]) -> None:
    spill = _Spill(tmp_path_factory.mktemp("spill"))
    for row in rows:
        spill.add(DAY, row)
    spill.finish()
    assert spill.sorted_rows(DAY) == sorted(rows)
    assert spill.sorted_rows(date(2026, 7, 2)) == []


@pytest.mark.parametrize("cut", [1, 3, 5, 9, 14])
def test_a_truncated_spill_file_is_an_error(tmp_path: Path, cut: int) -> None:
    spill = _Spill(tmp_path)
    spill.add(DAY, b"first-row")
    spill.add(DAY, b"second-row")
    spill.finish()
    path = tmp_path / f"{DAY.isoformat()}.spill"
    data = path.read_bytes()
    path.write_bytes(data[:len(data) - cut])
    with pytest.raises(OSError, match="truncated"):
        spill.sorted_rows(DAY)


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 2), st.lists(st.binary(max_size=40), max_size=12)), max_size=40),
       st.sampled_from([1, 64, 4 << 20]))
def test_batches_of_several_days_come_back_per_day(tmp_path_factory: pytest.TempPathFactory,
                                                   batches: list[tuple[int, list[bytes]]], flush_at: int) -> None:
    """Rows spilled a batch at a time (``extend``) or one by one, flushed in many small blocks or
    one: each day's rows come back whole, sorted, with the day's byte count."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(freeze, "_SPILL_BATCH", flush_at)
        spill = _Spill(tmp_path_factory.mktemp("spill"))
        expected: dict[date, list[bytes]] = {}
        for offset, rows in batches:
            day = date(2026, 7, 1 + offset)
            size = spill.extend(day, rows) if len(rows) != 1 else spill.add(day, rows[0])
            expected.setdefault(day, []).extend(rows)
            assert size == sum(map(len, expected[day]))
        spill.finish()
        for offset in range(3):
            day = date(2026, 7, 1 + offset)
            assert spill.sorted_rows(day) == sorted(expected.get(day, []))
