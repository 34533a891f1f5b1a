"""The freeze's fast path for CSV rows (sink.source.transcode) against the reference path.

The reference is the plain one: a record dict through ``RowNormalizer.normalize`` and
``RowEncoder.encode``. Over generated rows — valid, near-valid and hostile (impossible dates,
overflowing and odd-zoned timestamps, non-canonical and oversized numbers, quotes, delimiters,
newlines and the null text inside strings, lone surrogates) and over several mappings and
payload formats — the fast path must either give the reference's exact bytes and business date or
hand the row back (``Fallback``); it may never accept a row the reference refuses. End to end, a
freeze of a CSV file through the fast path and through the records-only path gives the same
parent, or the same refusal (code, field, record).
"""

from __future__ import annotations

import csv
import tempfile
from collections.abc import Iterator, Mapping
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sink.artifacts import LocalArtifactStore
from sink.contracts.errors import DeliveryError
from sink.contracts.mapping import PayloadMapping
from sink.contracts.profile_request import CsvDialect, JsonFormat
from sink.contracts.source import CsvFileSource
from sink.payload.encoding import PayloadEncoding, RowEncoder, payload_encoding
from sink.source.errors import SourceError
from sink.source.files import FileSourcePort
from sink.source.freeze import freeze
from sink.source.normalize import RowNormalizer
from sink.source.port import SourceSnapshot, TextRowSnapshot
from sink.source.transcode import MEMO_ENTRIES, MEMO_MAX_CHARS, Fallback, TextRowTranscoder
from tests.source.so_helpers import FROM, TO, plan

HEADER = ["business_date", "station_id", "reading", "label", "valid", "observed_at", "sample_count"]
_TIGHT_MAPPING = {"id": "mock.measurements.v1", "description": "tight", "scope_field": "business_date", "fields": [
    {"name": "business_date", "type": "date"},
    {"name": "station_id", "type": "string", "max_length": 6},
    {"name": "reading", "type": "decimal", "scale": 0, "nullable": True},
    {"name": "label", "type": "string", "nullable": True, "empty_string": "preserve", "max_length": 8},
    {"name": "valid", "type": "boolean", "nullable": True},
    {"name": "observed_at", "type": "timestamp"},
], "ignore_source_fields": ["sample_count"]}


def _variants() -> list[tuple[str, PayloadMapping, PayloadEncoding, str | None]]:
    compiled = plan()
    assert compiled.mapping is not None
    bundled, tight = compiled.mapping, PayloadMapping.model_validate(_TIGHT_MAPPING)
    csv_odd = CsvDialect(delimiter=";", null_text="NULL", empty_string="unquoted", timestamp_precision="microseconds",
                         boolean_text="1_0", line_terminator="lf")
    csv_zero = CsvDialect(null_text="0", timestamp_precision="milliseconds")
    ndjson = JsonFormat(decimal="number", timestamp_precision="milliseconds", unicode="ascii_escaped", null="omit")
    return [
        ("bundled csv", bundled, payload_encoding(compiled.operation), None),
        ("tight csv ;", tight, PayloadEncoding("csv", "none", 6, csv_odd, None), ""),
        ("tight csv null 0", tight, PayloadEncoding("csv", "none", 6, csv_zero, None), None),
        ("bundled ndjson", bundled, PayloadEncoding("ndjson", "none", 6, None, ndjson), None),
        ("tight json array", tight, PayloadEncoding("json_array", "none", 6, None, JsonFormat()), ""),
    ]


VARIANTS = _variants()

_DIGITS = "0123456789"
_pick = st.sampled_from
dates = st.one_of(
    _pick(["2026-03-01", "2026-03-04", "2026-03-05", "2026-02-28", "2026-02-30", "2026-3-01", "", " 2026-03-01",
           "\u0662\u0660\u0662\u0666-03-01", "2026-03-01T00:00:00Z"]),
    st.builds("{}-{}-{}".format, _pick(["2026", "0999", "1000", "9999", "0001"]), _pick(["01", "02", "03", "12", "13"]),
              _pick(["01", "04", "29", "31", "00"])),
)
decimals = st.one_of(
    _pick(["0", "-0", "-0.000", "0.000", "-0.100", "007.500", "1e5", "+1", " 1", "1.", ".5", "9" * 61, "9" * 59 + ".5",
           "1.0005", "NULL", "", "\u0661.000"]),
    st.builds("{}{}{}".format, _pick(["", "-", "+"]), st.text(_DIGITS, min_size=1, max_size=4),
              st.one_of(st.just(""), st.text(_DIGITS, max_size=5).map(".{}".format))),
)
_TIME_PARTS = [  # (good values, odd values) of each part of "Y-M-DTh:m:s<fraction><zone>"
    (["1000", "2026", "9999"], ["0001", "0999", "0000", "99999", "2\u0660\u0662\u0666"]),
    (["01", "02", "03", "12"], ["00", "13", "1"]),
    (["01", "09", "28"], ["00", "29", "30", "31", "32"]),
    (["00", "05", "23"], ["24", "99", "5"]),
    (["00", "30", "59"], ["60", "99"]),
    (["00", "07", "59"], ["60", "61", "7"]),
    (["", ".000", ".000000", ".5", ".120", ".123456"], [".", ".1234567", ",5", ".5 "]),
    (["Z", "+00:00", "+03:00", "-05:00", "+05:30", "-23:59", "+23:59", "-00:00"],
     ["+24:00", "+05:75", "-99:00", "z", "+0300", "", "+03", " Z"]),
]


@st.composite
def timestamps(draw: st.DrawFn) -> str:
    """A zoned timestamp with (usually) one part odd: impossible, overflowing or malformed."""
    parts = [draw(_pick(good)) for good, _ in _TIME_PARTS]
    odd = draw(st.integers(0, len(parts)))
    if odd < len(parts):
        parts[odd] = draw(_pick(_TIME_PARTS[odd][1]))
    year, month, day, hour, minute, second, fraction, zone = parts
    return f"{year}-{month}-{day}T{hour}:{minute}:{second}{fraction}{zone}"


odd_timestamps = st.one_of(
    timestamps(),
    _pick(["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59", "1000-01-01T00:00:00+00:01",
           "2026-03-01T08:00:00", "2026-03-01 08:00:00Z", "\u0662026-03-01T08:00:00Z"]),
    st.text(max_size=6),
)
strings = st.one_of(
    _pick(["", "NULL", "0", "plain", "Zürich", 'quote "x", comma', "semi;colon", "line\nbreak", "cr\rx", "tab\tx",
           "pipe|x", "toolongvalue", "東京東京東京東京東京"]),
    st.text(max_size=10),
)
integers = st.one_of(_pick(["0", "-0", "007", "12", "-3", "+1", "1e5", "9" * 41, "9" * 40, "", "1.0"]),
                     st.integers(-10**45, 10**45).map(str))
booleans = _pick(["true", "false", "True", "1", "0", "", " true"])
HOSTILE = [dates, strings, decimals, strings, booleans, odd_timestamps, integers]
_two = [f"{n:02d}" for n in range(60)]
GOOD = [
    st.dates(date(2026, 2, 27), date(2026, 3, 6)).map(date.isoformat),
    st.text("0123456789abcXYZ", min_size=1, max_size=6),
    st.one_of(st.integers(-10**6, 10**6).map(str), st.integers(-10**6, 10**6).map(
        lambda n: f"{'-' if n < 0 else ''}{abs(n) // 1000}.{abs(n) % 1000:03d}")),
    st.text("abcé東 ", min_size=1, max_size=8),
    _pick(["true", "false"]),
    st.builds("{}-{}-{}T{}:{}:{}{}{}".format, _pick(["1000", "2026", "9999"]), _pick(_two[1:13]), _pick(_two[1:29]),
              _pick(_two[:24]), _pick(_two), _pick(_two), _pick(["", ".000", ".000000", ".5", ".123456"]),
              _pick(["Z", "+03:00", "-05:00", "+05:30", "-23:59", "+23:59", "+00:00", "-00:00"])),
    st.integers(-1000, 1000).map(str),
]


@st.composite
def rows(draw: st.DrawFn) -> list[str]:
    """A row of good values with (usually) one column drawn from that column's hostile values."""
    fields = [draw(strategy) for strategy in GOOD]
    column = draw(st.integers(0, len(fields)))
    if column < len(fields):
        fields[column] = draw(HOSTILE[column])
    return fields


def _reference(normalizer: RowNormalizer, encoder: RowEncoder, fields: list[str],
               empty: str | None) -> tuple[date, bytes] | None:
    record = {name: (value if value != "" else empty) for name, value in zip(HEADER, fields, strict=True)}
    try:
        row = normalizer.normalize(record, 1)
        return date.fromisoformat(str(row[normalizer.scope_index])), encoder.encode(row)
    except (SourceError, ValueError):  # EncodeError and UnicodeEncodeError are ValueErrors
        return None


def _fast(transcoder: TextRowTranscoder, fields: list[str]) -> tuple[date, bytes] | None:
    try:
        return transcoder.encode(fields)
    except Fallback:
        return None


@settings(max_examples=400, deadline=None)
@given(variant=st.integers(0, len(VARIANTS) - 1), batch=st.lists(rows(), min_size=1, max_size=12),
       surrogate=st.booleans())
def test_fast_rows_are_the_reference_bytes_or_handed_back(variant: int, batch: list[list[str]],
                                                         surrogate: bool) -> None:
    _, mapping, encoding, empty = VARIANTS[variant]
    normalizer, encoder = RowNormalizer(mapping), RowEncoder(mapping, encoding)
    transcoder = TextRowTranscoder(normalizer, encoder, HEADER, empty)
    if surrogate:  # a lone surrogate no file reader lets through, as a database text column could
        batch = [*batch, [*batch[0][:3], "a\ud800b", *batch[0][4:]]]
    for fields in batch + batch:  # twice: the second pass answers from the memos
        expected = _reference(normalizer, encoder, fields, empty)
        got = _fast(transcoder, fields)
        assert got is None or got == expected, (fields, got, expected)


def test_the_fast_path_vouches_for_ordinary_rows() -> None:
    _, mapping, encoding, empty = VARIANTS[0]
    normalizer, encoder = RowNormalizer(mapping), RowEncoder(mapping, encoding)
    transcoder = TextRowTranscoder(normalizer, encoder, HEADER, empty)
    ordinary = [["2026-03-01", "00017", "12.500", "Москва", "true", "2026-03-01T08:00:00+03:00", "12"],
                ["2026-03-02", "00042", "-0.125", "", "false", "2026-03-02T00:10:00+05:30", ""],
                ["2026-03-03", "00100", "0.000", "x", "true", "2026-03-03T23:59:59-05:00", "-3"]]
    for fields in ordinary:
        assert transcoder.encode(fields) == _reference(normalizer, encoder, fields, empty)
    # The day before and after in UTC: +05:30 at 00:10 is the previous day, -05:00 at 23:59 the next.
    assert b"2026-03-01T18:40:00Z" in transcoder.encode(ordinary[1])[1]
    assert b"2026-03-04T04:59:59Z" in transcoder.encode(ordinary[2])[1]


def test_memos_stay_bounded() -> None:
    _, mapping, encoding, empty = VARIANTS[0]
    normalizer, encoder = RowNormalizer(mapping), RowEncoder(mapping, encoding)
    transcoder = TextRowTranscoder(normalizer, encoder, HEADER, empty)
    long_label = "x" * (MEMO_MAX_CHARS + 1)
    for number in range(MEMO_ENTRIES // 4):
        transcoder.encode(["2026-03-01", f"{number:06d}", "1.000", long_label, "true", "2026-03-01T00:00:00Z", "1"])
    station, label = transcoder._memos[1], transcoder._memos[3]  # the bound is the point
    room = max(1024, MEMO_ENTRIES // len(HEADER))
    # A full memo is emptied and refilled: it holds the last values seen, never more than its room.
    assert 0 < len(station) <= room
    assert f"{MEMO_ENTRIES // 4 - 1:06d}" in station and "000000" not in station
    assert len(station) == (MEMO_ENTRIES // 4) % room
    assert long_label not in label


class _RecordsOnly:
    """The same snapshot without ``text_rows``: the freeze takes the reference path."""

    def __init__(self, inner: SourceSnapshot) -> None:
        self._inner = inner
        self.kind = inner.kind

    def columns(self) -> list[str] | None:
        return self._inner.columns()

    def records(self) -> Iterator[tuple[int, Mapping[str, object]]]:
        return self._inner.records()

    def finish(self) -> str:
        return self._inner.finish()

    def close(self) -> None:
        self._inner.close()


class _RecordsOnlyPort:
    def __init__(self, port: FileSourcePort) -> None:
        self._port = port

    def open(self, scope_from: date, scope_to: date) -> _RecordsOnly:
        return _RecordsOnly(self._port.open(scope_from, scope_to))


def _outcome(port: Any, root: Path, variant: int) -> tuple[Any, ...]:
    _, mapping, encoding, _ = VARIANTS[variant]
    try:
        parent = freeze(snapshot_port=port, normalizer=RowNormalizer(mapping), encoder=RowEncoder(mapping, encoding),
                        scope_from=FROM, scope_to=TO, store=LocalArtifactStore(root), max_day_bytes=1000,
                        compiled_plan_digest="sha256:" + "0" * 64)
    except SourceError as error:
        return "refused", error.code, error.evidence.get("field"), error.evidence.get("record")
    except DeliveryError as error:
        return "refused", error.code
    # The manifest digest covers rows, histogram and the count of rows outside the scope.
    return "frozen", parent.digest, parent.rows_ref, parent.row_count


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(variant=st.sampled_from([0, 1, 3]), batch=st.lists(rows(), min_size=1, max_size=30))
def test_a_csv_freeze_is_the_same_on_both_paths(variant: int, batch: list[list[str]]) -> None:
    empty_field = "empty_string" if VARIANTS[variant][3] == "" else "null"
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with (root / "m.csv").open("w", encoding="utf-8", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(HEADER)
            writer.writerows(batch)
        port = FileSourcePort(CsvFileSource(type="csv_file", path="m.csv", empty_field=empty_field), root)
        probe = port.open(FROM, TO)
        probe.close()
        assert isinstance(probe, TextRowSnapshot)
        fast = _outcome(port, root / "fast", variant)
        reference = _outcome(_RecordsOnlyPort(port), root / "reference", variant)
    assert fast == reference


@pytest.mark.parametrize("variant", range(len(VARIANTS)), ids=[name for name, *_ in VARIANTS])
def test_every_variant_accepts_a_good_row_on_the_fast_path(variant: int) -> None:
    _, mapping, encoding, empty = VARIANTS[variant]
    normalizer, encoder = RowNormalizer(mapping), RowEncoder(mapping, encoding)
    transcoder = TextRowTranscoder(normalizer, encoder, HEADER, empty)
    fields = ["2026-03-01", "00017", "12", "Zürich", "true", "2026-03-01T08:00:00+03:00", "12"]
    assert transcoder.encode(fields) == _reference(normalizer, encoder, fields, empty)


def _edge_values() -> list[tuple[int, str]]:
    """(column, value): every listed odd value of every column, each alone in a good row."""
    edges: list[tuple[int, str]] = []
    good_time = [good[2] for good, _ in _TIME_PARTS[:6]] + ["", "+05:30"]
    for part, (good, odd) in enumerate(_TIME_PARTS):
        for value in good + odd:
            parts = [*good_time]
            parts[part] = value
            year, month, day, hour, minute, second, fraction, zone = parts
            edges.append((5, f"{year}-{month}-{day}T{hour}:{minute}:{second}{fraction}{zone}"))
    for column, values in _EDGE_SAMPLES.items():
        edges.extend((column, value) for value in values)
    return edges


_EDGE_SAMPLES = {
    0: ["2026-03-01", "2026-02-30", "2026-3-01", "", " 2026-03-01", "\u0662\u0660\u0662\u0666-03-01", "0999-03-01"],
    1: ["", "NULL", "0", "x" * 6, "x" * 7, 'a"b', "a,b", "a;b", "a\nb", "a\rb", "a\tb", "a|b", "\ud800"],
    2: ["0", "-0", "-0.000", "0.000", "-0.100", "007.500", "1e5", "+1", " 1", "1.", ".5", "9" * 61, "9" * 60,
        "9" * 59 + ".5", "1.0005", "1.500", "NULL", "", "\u0661.000", "12", "-12.000"],
    3: ["", "NULL", "0", "x" * 8, "x" * 9, 'a"b', "a,b", "a;b", "a\nb", "\ud800"],
    4: ["true", "false", "True", "1", "0", "", " true"],
    5: ["1000-01-01T00:00:00+00:01", "1000-01-01T00:30:00+05:30", "1000-01-02T00:00:00+00:01",
        "9999-12-31T23:59:59-23:59", "9999-12-31T00:00:00-23:59", "0001-01-01T00:00:00+23:59",
        "0999-12-31T23:59:00-00:01", "2026-03-01T08:00:00", "2026-03-01T23:59:59-00:01", ""],
    6: ["0", "-0", "007", "12", "-3", "+1", "1e5", "9" * 41, "9" * 40, "", "1.0"],
}


@pytest.mark.parametrize("variant", range(len(VARIANTS)), ids=[name for name, *_ in VARIANTS])
def test_each_edge_value_alone_in_a_good_row_matches_the_reference(variant: int) -> None:
    _, mapping, encoding, empty = VARIANTS[variant]
    normalizer, encoder = RowNormalizer(mapping), RowEncoder(mapping, encoding)
    transcoder = TextRowTranscoder(normalizer, encoder, HEADER, empty)
    base = ["2026-03-01", "00017", "12", "Zürich", "true", "2026-03-01T08:00:00+03:00", "12"]
    accepted = 0
    for column, value in _edge_values():
        fields = [*base]
        fields[column] = value
        for _ in range(2):  # the second answer comes from the memo
            expected, got = _reference(normalizer, encoder, fields, empty), _fast(transcoder, fields)
            assert got is None or got == expected, (fields, got, expected)
            accepted += got is not None
    assert accepted > 0


def test_columns_in_another_order_give_the_same_parent(tmp_path: Path) -> None:
    good = [["2026-03-01", "00017", "12.500", "Москва", "true", "2026-03-01T08:00:00+03:00", "12"],
            ["2026-03-02", "00042", "-0.125", "", "false", "2026-03-02T00:10:00+05:30", ""]]
    outcomes = []
    for name, order in (("plain.csv", list(range(len(HEADER)))), ("reversed.csv", list(range(len(HEADER)))[::-1])):
        with (tmp_path / name).open("w", encoding="utf-8", newline="") as out:
            writer = csv.writer(out)
            writer.writerow([HEADER[index] for index in order])
            writer.writerows([[fields[index] for index in order] for fields in good])
        port = FileSourcePort(CsvFileSource(type="csv_file", path=name), tmp_path)
        outcomes.append(_outcome(port, tmp_path / f"fast-{name}", 0))
        outcomes.append(_outcome(_RecordsOnlyPort(port), tmp_path / f"reference-{name}", 0))
    assert outcomes[0][0] == "frozen" and outcomes[0][3] == 2
    assert outcomes[0] == outcomes[1] and outcomes[2] == outcomes[3]
    # The two files' versions differ, so their manifests do; their rows do not.
    assert outcomes[0][2] == outcomes[2][2]
