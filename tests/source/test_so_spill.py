"""The freeze's per-day spill: rows come back sorted, every byte kept, and a truncated file is an
error, never a shorter row."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
