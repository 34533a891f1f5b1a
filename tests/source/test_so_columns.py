"""The freeze's batch path (``TextRowTranscoder.encode_batch``, sink.source.columns) against the
reference path, and the column shortcuts actually taken for ordinary columns.

A batch is either written with exactly the reference's bytes and business dates for every row,
or handed back whole (``Fallback``) — never accepted where the reference refuses a row. The
column shortcuts (verbatim text, canonical numbers, timestamps from their local hour or minute)
are checked on tricky values: the edge days where a UTC shift leaves years 1000-9999, zones of
±23:59 and of minutes, fractions and precisions, negative zeros, the null text, unicode, empty
fields, JSON escapes.
"""

from __future__ import annotations

import csv
import re
import tempfile
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sink.contracts.source import CsvFileSource
from sink.payload.encoding import RowEncoder
from sink.source import files
from sink.source.columns import Fallback, Memo, Piece, text_column, timestamp_column
from sink.source.files import FileSourcePort
from sink.source.normalize import RowNormalizer
from sink.source.transcode import TextRowTranscoder
from tests.source.test_so_transcode import (
    GOOD,
    HEADER,
    HOSTILE,
    VARIANTS,
    _outcome,
    _RecordsOnlyPort,
    _reference,
    odd_timestamps,
)

_BASE = ["2026-03-01", "00017", "12", "Zürich", "true", "2026-03-01T08:00:00+03:00", "12"]
_pick = st.sampled_from
_two = [f"{n:02d}" for n in range(60)]
_DAYS = ["1000-01-01", "1000-01-02", "1000-03-01", "2026-02-28", "2026-03-01", "2026-12-31", "9999-12-30",
         "9999-12-31"]
_ZONES = ["Z", "+00:00", "-00:00", "+03:00", "-05:00", "+05:30", "-05:30", "+00:01", "-00:01", "+23:59", "-23:59",
          "+12:45", "-09:30", "+14:00", "+05:75"]  # the reference reads +05:75 as 6:15 ahead
_FRACTIONS = ["", ".0", ".000", ".000000", ".5", ".120", ".123456", ".000001"]
edge_timestamps = st.builds("{}T{}:{}:{}{}{}".format, _pick(_DAYS), _pick(_two[:24]), _pick(_two), _pick(_two),
                            _pick(_FRACTIONS), _pick(_ZONES))


def _compiled(variant: int) -> tuple[RowNormalizer, RowEncoder, str | None, TextRowTranscoder]:
    _, mapping, encoding, empty = VARIANTS[variant]
    normalizer, encoder = RowNormalizer(mapping), RowEncoder(mapping, encoding)
    return normalizer, encoder, empty, TextRowTranscoder(normalizer, encoder, HEADER, empty)


def _check_batch(variant: int, rows: list[list[str]]) -> bool:
    """The batch's bytes are the reference's row for row, or it was handed back; True: written."""
    normalizer, encoder, empty, transcoder = _compiled(variant)
    for _ in range(2):  # the second pass answers from the memos
        try:
            days, encoded = transcoder.encode_batch(rows)
        except Fallback:
            return False
        expected = [_reference(normalizer, encoder, fields, empty) for fields in rows]
        assert list(zip(days, encoded, strict=True)) == expected, rows
    return True


@settings(max_examples=300, deadline=None)
@given(variant=st.integers(0, len(VARIANTS) - 1), column=st.integers(0, len(HEADER) - 1),
       rows=st.lists(st.tuples(*GOOD), min_size=1, max_size=40), odd=st.lists(st.data(), max_size=3))
def test_a_batch_is_the_reference_bytes_or_handed_back(variant: int, column: int, rows: list[tuple[str, ...]],
                                                      odd: list[st.DataObject]) -> None:
    batch = [list(fields) for fields in rows]
    for data in odd:  # a few hostile values in one column, anywhere in the batch
        at = data.draw(st.integers(0, len(batch) - 1))
        batch[at][column] = data.draw(HOSTILE[column])
    _check_batch(variant, batch)


@settings(max_examples=200, deadline=None)
@given(variant=st.integers(0, len(VARIANTS) - 1), stamps=st.lists(edge_timestamps, min_size=1, max_size=60))
def test_edge_timestamps_in_a_batch(variant: int, stamps: list[str]) -> None:
    _check_batch(variant, [[*_BASE[:5], stamp, _BASE[6]] for stamp in stamps])


@settings(max_examples=200, deadline=None)
@given(variant=st.integers(0, len(VARIANTS) - 1),
       values=st.lists(st.one_of(odd_timestamps, edge_timestamps), min_size=1, max_size=20))
def test_odd_timestamps_in_a_batch(variant: int, values: list[str]) -> None:
    _check_batch(variant, [[*_BASE[:5], value, _BASE[6]] for value in values])


_TEXT = {
    1: ["", "NULL", "0", "x" * 6, "x" * 7, "x" * 32, "x" * 33, 'a"b', "a,b", "a;b", "a\nb", "a\rb", "a\tb", "a|b",
        "a\\b", "\x7f", "\x00", "é", "東京", "\U0001f600", "\ud800"],
    2: ["0", "-0", "0.000", "-0.000", "-0.100", "0.100", "007.500", "1.", ".5", "1.500", "-1.500", "12", "-12",
        "1" * 56 + ".500", "1" * 57 + ".500", "-" + "1" * 56 + ".500", "9" * 60, "9" * 61, "1\n2", "1.5000", ""],
    6: ["0", "-0", "007", "12", "-3", "+1", "9" * 40, "9" * 41, "-" + "9" * 40, "1\n2", "", "1.0"],
}


@pytest.mark.parametrize("variant", range(len(VARIANTS)), ids=[name for name, *_ in VARIANTS])
@pytest.mark.parametrize("column", sorted(_TEXT))
def test_each_text_value_in_a_batch_of_good_ones(variant: int, column: int) -> None:
    for value in _TEXT[column]:
        rows = [[*_BASE] for _ in range(3)]
        rows[1][column] = value
        _check_batch(variant, rows)


def _never(raw: str) -> Piece:
    raise AssertionError("the per-value path was taken")


def _piece(variant: int, index: int) -> Callable[[str], tuple[str, Piece]]:
    normalizer, encoder, _, _ = _compiled(variant)
    writer = encoder.row_pieces()[0][index]

    def piece(raw: str) -> tuple[str, Piece]:
        value = normalizer.field_value(index, raw)
        return str(value), writer(value)

    return piece


_TIMESTAMP_INDEX = 5


@settings(max_examples=200, deadline=None)
@given(variant=st.integers(0, len(VARIANTS) - 1),
       stamps=st.lists(st.builds("{}T{}:{}:{}{}{}".format, _pick(_DAYS[1:-1]), _pick(_two[:24]), _pick(_two),
                                 _pick(_two), _pick(["", ".000", ".000000"]), _pick(_ZONES)), min_size=1, max_size=60))
def test_the_timestamp_shortcut_writes_ordinary_columns_itself(variant: int, stamps: list[str]) -> None:
    """Whole-second timestamps on days away from the year bounds, in any zone: the column is
    written from its local hours and minutes (the per-value path is never asked) and equals the
    reference value by value."""
    piece = _piece(variant, _TIMESTAMP_INDEX)
    write = timestamp_column(Memo(_never, 64), piece, 8)  # a small room: the memos are emptied too
    for _ in range(2):
        assert list(write(stamps)) == [piece(stamp)[1] for stamp in stamps]


@pytest.mark.parametrize("stamp", ["1000-01-01T00:30:00+05:30", "9999-12-31T23:59:59-23:59", "2026-03-01T08:00:00.5Z",
                                   "2026-03-01T24:00:00Z", "2026-03-01T08:60:00Z", "2026-03-01T08:00:60Z",
                                   "2026-03-01T08:00:00", "2026-03-01T08:00:00+24:00",
                                   "2026-02-30T08:00:00Z", "2026-03-01T08:00:0\u0661Z", "2026-03-01T08:\u06610:00Z",
                                   "2026-03-01T08:00:00Z\n", "2026-03-01 08:00:00Z", "2026-03-01T08:00:00.1234567Z",
                                   "2026-03-01T08:00Z", ""])
def test_the_timestamp_shortcut_leaves_what_it_can_not_vouch_for(stamp: str) -> None:
    """Out-of-bound days, fractions the profile cuts (seconds precision), impossible or foreign
    clocks and zones: the column goes to the per-value path (here: refused)."""
    write = timestamp_column(Memo(_never, 64), _piece(0, _TIMESTAMP_INDEX), 64)
    with pytest.raises(Fallback):
        write(["2026-03-01T08:00:00+03:00", stamp])


@pytest.mark.parametrize("variant", range(len(VARIANTS)), ids=[name for name, *_ in VARIANTS])
def test_plain_text_columns_are_written_without_the_per_value_path(variant: int) -> None:
    normalizer, encoder, _, _ = _compiled(variant)
    fields = normalizer.mapping.fields
    unicode = encoder.encoding.json is None or encoder.encoding.json.unicode == "utf-8"
    texts = ["00017", "a b", "x-y", *(["Zürich", "東京"] if unicode else [])]
    for index, raw in ((1, texts), (2, ["12", "-3", "10"])):
        affixes = encoder.verbatim_affixes(index)
        assert affixes is not None
        scale = fields[index].scale if fields[index].type == "decimal" else None
        values = [f"{value}.{'0' * scale}" for value in raw] if scale else raw
        if fields[index].type == "string":
            values = [value for value in values if len(value) <= fields[index].max_length]
        writer = encoder.row_pieces()[0][index]
        normal: Callable[[list[str]], bool] = (lambda column: True) if fields[index].type == "string" else (
            lambda column: all(re.fullmatch(r"-?[1-9][0-9]*|0|-?(?:0|[1-9][0-9]*)\.[0-9]+", v) for v in column))
        write = text_column(Memo(_never, 64), affixes, normal)
        assert list(write(values)) == [writer(normalizer.field_value(index, value)) for value in values], variant


def test_every_row_of_an_ordinary_batch_is_written_by_the_batch_path() -> None:
    normalizer, encoder, empty, transcoder = _compiled(0)
    rows = [[f"2026-03-0{1 + n % 3}", f"{n:05d}", f"{n}.{n % 1000:03d}", "Москва" if n % 2 else "", "true",
             f"2026-03-0{1 + n % 3}T{n % 24:02d}:{n % 60:02d}:{n % 59:02d}{['Z', '+05:30', '-05:00'][n % 3]}",
             str(n % 7) if n % 5 else ""] for n in range(500)]
    days, encoded = transcoder.encode_batch(rows)
    assert list(zip(days, encoded, strict=True)) == [_reference(normalizer, encoder, row, empty) for row in rows]
    assert days[:3] == [date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(variant=st.sampled_from([0, 1, 3]), rows=st.lists(st.tuples(*GOOD), min_size=1, max_size=80),
       odd=st.lists(st.tuples(st.integers(0, 79), st.integers(0, len(HEADER) - 1), st.data()), max_size=2),
       batch=st.sampled_from([1, 7, 2048]))
def test_a_csv_freeze_in_batches_is_the_reference_freeze(variant: int, rows: list[tuple[str, ...]],
                                                         odd: list[tuple[int, int, st.DataObject]], batch: int) -> None:
    """Whole freezes: batches over several days (one spill call per run of a day), batches handed
    back for a hostile value, rows outside the scope — the same parent, or the same refusal
    (code, field, record), as the records-only reference path."""
    table = [list(fields) for fields in rows]
    for at, column, data in odd:
        table[at % len(table)][column] = data.draw(HOSTILE[column])
    empty_field = "empty_string" if VARIANTS[variant][3] == "" else "null"
    with tempfile.TemporaryDirectory() as scratch, pytest.MonkeyPatch.context() as patch:
        patch.setattr(files, "_BATCH_ROWS", batch)
        root = Path(scratch)
        with (root / "m.csv").open("w", encoding="utf-8", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(HEADER)
            writer.writerows(table)
        port = FileSourcePort(CsvFileSource(type="csv_file", path="m.csv", empty_field=empty_field), root)
        reference = _outcome(_RecordsOnlyPort(port), root / "reference", variant)
        assert _outcome(port, root / "batched", variant) == reference
