"""The harness's own reader of the dataset: each value rule of docs/payloads.md ("Mappings") both
ways, the three sources it reads (CSV with its empty_field, NDJSON, a SQLite query), and the
receiver-row reading that compares values, not bytes (``12.500`` is ``12.5``, a zoned timestamp is
its UTC instant, ``1``/``0`` are booleans, an extra field is no row of the dataset)."""

from __future__ import annotations

import sqlite3
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from certification.dataset import (
    MAX_SOURCE_BYTES,
    DatasetError,
    day_range,
    read_dataset,
    row_digest,
    typed_value,
)
from certification.scenarios import BUNDLED
from sink.contracts.mapping import MappedField

SENTINEL = "sentinel-value-7f3a"
FIELDS: list[dict[str, Any]] = [
    {"name": "business_date", "type": "date"},
    {"name": "station_id", "type": "string", "max_length": 32},
    {"name": "reading", "type": "decimal", "scale": 3},
    {"name": "label", "type": "string", "nullable": True, "empty_string": "as_null"},
    {"name": "valid", "type": "boolean"},
    {"name": "observed_at", "type": "timestamp"},
    {"name": "sample_count", "type": "integer", "nullable": True},
]
HEADER = "business_date,station_id,reading,label,valid,observed_at,sample_count\n"


def spec(type_: str, **extra: Any) -> MappedField:
    if type_ == "decimal":
        extra.setdefault("scale", 3)
    return MappedField(name="f", type=type_, **extra)  # type: ignore[arg-type]


# --- value rules ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("type_", "raw", "value"), [
    ("string", "00017", ("str", "00017")),  # leading zeros kept: text, not a number
    ("string", "Москва", ("str", "Москва")),
    ("integer", "12", ("int", "12")),
    ("integer", "-7", ("int", "-7")),
    ("integer", "0", ("int", "0")),
    ("integer", "-0", ("int", "0")),
    ("integer", 42, ("int", "42")),
    ("decimal", "12.500", ("dec", "12.5")),
    ("decimal", "12.5", ("dec", "12.5")),
    ("decimal", "3", ("dec", "3")),
    ("decimal", "100", ("dec", "100")),
    ("decimal", "-0.125", ("dec", "-0.125")),
    ("decimal", "0.000", ("dec", "0")),
    ("decimal", 7, ("dec", "7")),
    ("decimal", Decimal("1000.001"), ("dec", "1000.001")),
    ("decimal", Decimal("1.5E+2"), ("dec", "150")),
    ("boolean", "true", ("bool", "true")),
    ("boolean", "false", ("bool", "false")),
    ("boolean", True, ("bool", "true")),
    ("boolean", False, ("bool", "false")),
    ("boolean", "1", ("bool", "true")),  # the receiver's own encoding of a boolean
    ("boolean", "0", ("bool", "false")),
    ("date", "2026-03-01", ("date", "2026-03-01")),
    ("date", "2024-02-29", ("date", "2024-02-29")),
    ("timestamp", "2026-03-01T08:00:00+03:00", ("ts", "2026-03-01T05:00:00+00:00")),
    ("timestamp", "2026-03-01T05:00:00Z", ("ts", "2026-03-01T05:00:00+00:00")),
    ("timestamp", "2026-03-01T05:00:00.000000Z", ("ts", "2026-03-01T05:00:00+00:00")),
    ("timestamp", "2026-03-01T00:00:00-05:00", ("ts", "2026-03-01T05:00:00+00:00")),
])
def test_accepted_forms(type_: str, raw: object, value: tuple[str, str]) -> None:
    assert typed_value(spec(type_), raw) == value


@pytest.mark.parametrize(("type_", "raw", "problem"), [
    ("string", 17, "not text"),
    ("string", Decimal("1.5"), "not text"),
    ("string", True, "not text"),
    ("integer", "012", "not an integer"),
    ("integer", "1.0", "not an integer"),
    ("integer", "1e3", "not an integer"),
    ("integer", " 1", "not an integer"),
    ("integer", "+1", "not an integer"),
    ("integer", Decimal("1.5"), "not an integer"),
    ("integer", True, "a boolean"),
    ("integer", 1.0, "not a scalar"),
    ("decimal", "12.5000", None),  # trailing zeros beyond the scale lose nothing: accepted
    ("decimal", "12.0001", "more fraction digits than the scale"),
    ("decimal", "1.", "not a decimal"),
    ("decimal", ".5", "not a decimal"),
    ("decimal", "1,5", "not a decimal"),
    ("decimal", "1e3", "not a decimal"),
    ("decimal", "NaN", "not a decimal"),
    ("decimal", "+1.5", "not a decimal"),
    ("decimal", False, "a boolean"),
    ("decimal", 1.5, "not a scalar"),
    ("boolean", "yes", "not a boolean"),
    ("boolean", "True", "not a boolean"),
    ("boolean", "2", "not a boolean"),
    ("date", "2026-13-01", "not a YYYY-MM-DD date"),
    ("date", "2026-02-30", "not a YYYY-MM-DD date"),
    ("date", "2026-3-1", "not a YYYY-MM-DD date"),
    ("date", "20260301", "not a YYYY-MM-DD date"),
    ("date", "2026-03-01T00:00:00Z", "not a YYYY-MM-DD date"),
    ("date", True, "a boolean"),
    ("timestamp", "2026-03-01T08:00:00", "not a zoned ISO 8601 timestamp"),  # zone-less: its instant is unknown
    ("timestamp", "2026-03-01", "not a zoned ISO 8601 timestamp"),
    ("timestamp", "yesterday", "not a zoned ISO 8601 timestamp"),
    ("timestamp", "2026-03-01T25:00:00Z", "not a zoned ISO 8601 timestamp"),
])
def test_refusals_name_the_rule(type_: str, raw: object, problem: str | None) -> None:
    result = typed_value(spec(type_), raw)
    if problem is None:
        assert not isinstance(result, str)
    else:
        assert result == problem


def test_a_decimal_in_exponent_form_keeps_its_scale() -> None:
    # 1E-7 (an NDJSON 1e-7, a SQLite float) has seven fraction digits: more than a scale of 3 allows.
    assert typed_value(spec("decimal"), Decimal("1E-7")) == "more fraction digits than the scale"
    assert typed_value(spec("decimal"), Decimal("NaN")) == "not a decimal"
    assert typed_value(spec("decimal"), Decimal("Infinity")) == "not a decimal"


def test_negative_zero_is_zero() -> None:
    # The sink writes -0 as 0 (docs/payloads.md): a source "-0.000" and a receiver's "0.000" are one value.
    assert typed_value(spec("decimal"), "-0.000") == typed_value(spec("decimal"), "0.000") == ("dec", "0")
    assert typed_value(spec("decimal"), "-0") == ("dec", "0")
    assert typed_value(spec("decimal"), Decimal("-0E-5")) == ("dec", "0")


def test_types_are_kept_apart() -> None:
    assert typed_value(spec("string"), "1") != typed_value(spec("integer"), "1")
    assert typed_value(spec("integer"), "1") != typed_value(spec("decimal"), "1")
    assert typed_value(spec("boolean"), "1") != typed_value(spec("integer"), "1")


@pytest.mark.parametrize("type_", ["string", "integer", "decimal", "boolean", "date", "timestamp"])
def test_null_only_in_a_nullable_field(type_: str) -> None:
    assert typed_value(spec(type_), None) == "null in a non-nullable field"
    assert typed_value(spec(type_, nullable=True), None) is None


@pytest.mark.parametrize("type_", ["integer", "decimal", "boolean", "date", "timestamp"])
def test_an_empty_text_of_a_nullable_field_is_null(type_: str) -> None:
    assert typed_value(spec(type_, nullable=True), "") is None
    assert isinstance(typed_value(spec(type_), ""), str)  # not nullable: refused by its type's rule


def test_empty_strings_follow_the_fields_policy() -> None:
    assert typed_value(spec("string"), "") == "an empty string the mapping refuses"
    assert typed_value(spec("string", empty_string="preserve"), "") == ("str", "")
    assert typed_value(spec("string", nullable=True, empty_string="preserve"), "") == ("str", "")
    assert typed_value(spec("string", nullable=True, empty_string="as_null"), "") is None
    assert typed_value(spec("string", nullable=True), "") is None  # CSV cannot tell "" from null
    assert typed_value(spec("string", nullable=True, empty_string="preserve"), None) is None


# --- reading a workload's dataset -------------------------------------------------------------------------


def _write(tmp_path: Path, source: dict[str, Any], *, kind: str = "partition_replace",
           fields: list[dict[str, Any]] | None = None) -> Path:
    (tmp_path / "mappings").mkdir(exist_ok=True)
    (tmp_path / "workloads").mkdir(exist_ok=True)
    mapping = {"id": "test.mapping.v1", "description": "m", "scope_field": "business_date",
               "fields": fields or FIELDS}
    (tmp_path / "mappings" / "test.mapping.v1.yaml").write_text(yaml.safe_dump(mapping))
    workload = {
        "logical_route_id": "route-test", "description": "w",
        "sink": {"type": "rest", "connection_ref": "mock_measurements", "operation_profile_ref": "mock.json-batches@1",
                 "resource": "measurements",
                 "mutation": {"kind": kind, "generation_from": "scheduled_interval",
                              "scope": {"type": "inclusive_date_window", "source_field": "business_date"}},
                 "payload": {"mapping_ref": "test.mapping.v1"}},
        "source": source,
    }
    path = tmp_path / "workloads" / "w.yaml"
    path.write_text(yaml.safe_dump(workload))
    return path


def _csv(tmp_path: Path, text: str | bytes, **source: Any) -> Path:
    data = tmp_path / "workloads" / "data.csv"
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_bytes(text.encode() if isinstance(text, str) else text)
    return _write(tmp_path, {"type": "csv_file", "path": "data.csv", **source})


ROW1 = "2026-03-01,00017,12.500,Москва,true,2026-03-01T08:00:00+03:00,12\n"
ROW2 = "2026-03-02,00042,-0.125,,false,2026-03-02T06:30:00Z,\n"


def test_the_bundled_sync_dataset_is_read_per_day() -> None:
    dataset = read_dataset(BUNDLED.parent / "workloads" / "measurements-sync.yaml", "2026-03-01", "2026-03-05")
    assert dataset.universe == ("2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04")
    assert [dataset.row_count(day) for day in dataset.universe] == [3, 2, 1, 2]
    assert dataset.resource == "measurements" and dataset.mutation_kind == "partition_replace"
    assert dataset.scope_field == "business_date" and dataset.fields[0].name == "business_date"


def test_days_without_rows_are_part_of_the_universe(tmp_path: Path) -> None:
    dataset = read_dataset(_csv(tmp_path, HEADER + ROW2), "2026-03-01", "2026-03-04")
    assert dataset.universe == ("2026-03-01", "2026-03-02", "2026-03-03")
    assert dataset.days_with_rows() == ("2026-03-02",)
    assert dataset.rows_of("2026-03-01") == Counter() and dataset.row_count("2026-03-03") == 0
    assert dataset.rows_of("2026-04-01") == Counter()  # outside the universe: nothing expected


def test_rows_outside_the_scope_are_not_part_of_the_delivery(tmp_path: Path) -> None:
    dataset = read_dataset(_csv(tmp_path, HEADER + ROW1 + ROW2), "2026-03-02", "2026-03-03")
    assert dataset.universe == ("2026-03-02",) and dataset.row_count("2026-03-02") == 1


def test_the_same_row_twice_is_expected_twice(tmp_path: Path) -> None:
    dataset = read_dataset(_csv(tmp_path, HEADER + ROW1 + ROW1), "2026-03-01", "2026-03-02")
    assert dataset.row_count("2026-03-01") == 2 and len(dataset.rows_of("2026-03-01")) == 1


def test_csv_with_a_bom_and_another_delimiter(tmp_path: Path) -> None:
    text = "\ufeff" + (HEADER + ROW1).replace(",", ";")
    dataset = read_dataset(_csv(tmp_path, text, delimiter=";"), "2026-03-01", "2026-03-02")
    (row,) = dataset.rows_of("2026-03-01")
    assert dict(row)["station_id"] == ("str", "00017") and dict(row)["reading"] == ("dec", "12.5")


def test_csv_empty_field_null_or_empty_string(tmp_path: Path) -> None:
    fields = [*FIELDS[:3], {"name": "label", "type": "string", "empty_string": "preserve"}, *FIELDS[4:]]
    text = HEADER + "2026-03-01,00017,1,,true,2026-03-01T08:00:00Z,1\n"
    _csv(tmp_path, text)
    kept = read_dataset(_write(tmp_path, {"type": "csv_file", "path": "data.csv", "empty_field": "empty_string"},
                               fields=fields), "2026-03-01", "2026-03-02")
    assert dict(next(iter(kept.rows_of("2026-03-01"))))["label"] == ("str", "")
    with pytest.raises(DatasetError, match=r"field 'label': null in a non-nullable field"):
        read_dataset(_write(tmp_path, {"type": "csv_file", "path": "data.csv"}, fields=fields),
                     "2026-03-01", "2026-03-02")


def test_ndjson_source(tmp_path: Path) -> None:
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "data.ndjson").write_text(
        '{"business_date": "2026-03-01", "station_id": "00017", "reading": 12.500, "label": null, "valid": true,'
        ' "observed_at": "2026-03-01T05:00:00Z", "sample_count": 3}\n\n'
        '{"business_date": "2026-03-01", "station_id": "00018", "reading": 3, "label": "x", "valid": false,'
        ' "observed_at": "2026-03-01T05:00:00Z", "sample_count": null, "extra": 1}\n')
    dataset = read_dataset(_write(tmp_path, {"type": "ndjson_file", "path": "data.ndjson"}), "2026-03-01",
                           "2026-03-02")
    rows = sorted(dict(row)["station_id"][1] for row in dataset.rows_of("2026-03-01"))
    assert rows == ["00017", "00018"]
    first = next(dict(row) for row in dataset.rows_of("2026-03-01") if dict(row)["station_id"] == ("str", "00017"))
    assert first["reading"] == ("dec", "12.5") and first["label"] is None and first["valid"] == ("bool", "true")


NDJSON_ROW = ('{"business_date": "2026-03-09", "station_id": "1", "reading": 1, "label": null, "valid": true,'
              ' "observed_at": "2026-03-09T05:00:00Z", "sample_count": 3}\n')


@pytest.mark.parametrize(("text", "message"), [
    ("[1, 2]\n", "line 1 is not an object"),
    (NDJSON_ROW + "{nope\n", "line 2 is not JSON"),
    ("[" * 100_000 + "\n", "line 1 is not JSON"),
])
def test_ndjson_refusals(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "data.ndjson").write_text(text)
    with pytest.raises(DatasetError, match=message):
        read_dataset(_write(tmp_path, {"type": "ndjson_file", "path": "data.ndjson"}), "2026-03-01", "2026-03-02")


def test_ndjson_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "data.ndjson").write_bytes(b'{"a": "\xff"}\n')
    with pytest.raises(DatasetError, match="not UTF-8"):
        read_dataset(_write(tmp_path, {"type": "ndjson_file", "path": "data.ndjson"}), "2026-03-01", "2026-03-02")


def _sqlite(tmp_path: Path, rows: list[tuple[Any, ...]], query: str | None = None) -> Path:
    (tmp_path / "workloads").mkdir(exist_ok=True)
    with sqlite3.connect(tmp_path / "workloads" / "data.db") as connection:
        connection.execute("create table m (business_date text, station_id text, reading, label text, valid,"
                           " observed_at text, sample_count integer)")
        connection.executemany("insert into m values (?, ?, ?, ?, ?, ?, ?)", rows)
    connection.close()
    return _write(tmp_path, {"type": "sqlite_query", "path": "data.db", "query": query or
                             "select * from m where business_date >= :scope_from and business_date < :scope_to"})


def test_sqlite_query_with_the_scope_as_parameters(tmp_path: Path) -> None:
    workload = _sqlite(tmp_path, [("2026-03-01", "00017", 12.5, None, 1, "2026-03-01T05:00:00Z", 3),
                                  ("2026-03-01", "00018", "0.125", "x", 0, "2026-03-01T05:00:00Z", None),
                                  ("2026-03-09", "00019", 1, "x", 0, "2026-03-09T05:00:00Z", None)])
    dataset = read_dataset(workload, "2026-03-01", "2026-03-02")
    rows = {dict(row)["station_id"][1]: dict(row) for row in dataset.rows_of("2026-03-01")}
    assert set(rows) == {"00017", "00018"}
    assert rows["00017"]["reading"] == ("dec", "12.5")  # a float, read through its shortest repr
    assert rows["00017"]["valid"] == ("bool", "true") and rows["00018"]["valid"] == ("bool", "false")
    assert rows["00018"]["sample_count"] is None


def test_sqlite_refusals(tmp_path: Path) -> None:
    workload = _sqlite(tmp_path, [], query="select * from no_such_table")
    with pytest.raises(DatasetError, match=r"the query failed \(OperationalError\)"):
        read_dataset(workload, "2026-03-01", "2026-03-02")
    (tmp_path / "workloads" / "data.db").write_bytes(b"not a database" * 100)
    with pytest.raises(DatasetError, match="the query failed"):
        read_dataset(workload, "2026-03-01", "2026-03-02")
    (tmp_path / "workloads" / "data.db").unlink()
    with pytest.raises(DatasetError, match="cannot be opened read-only"):
        read_dataset(workload, "2026-03-01", "2026-03-02")


def test_the_sqlite_file_is_opened_read_only(tmp_path: Path) -> None:
    workload = _sqlite(tmp_path, [], query="insert into m (business_date) values ('2026-03-01') returning *")
    with pytest.raises(DatasetError, match="the query failed"):
        read_dataset(workload, "2026-03-01", "2026-03-02")
    with sqlite3.connect(tmp_path / "workloads" / "data.db") as connection:
        assert connection.execute("select count(*) from m").fetchone() == (0,)
    connection.close()


@pytest.mark.parametrize(("text", "message"), [
    (HEADER + "2026-03-01,00017\n", "line 2 has 2 fields, the header 7"),
    (HEADER + '2026-03-01,"00017"x,1,,true,2026-03-01T08:00:00Z,1\n', "not CSV"),
    (b"\xff\xfe" + HEADER.encode(), "not UTF-8"),
    (HEADER.replace("station_id", "station") + ROW1, "source row 2: no column 'station_id'"),
    (HEADER + f"2026-03-01,00017,{SENTINEL},,true,2026-03-01T08:00:00Z,1\n",
     r"source row 2, field 'reading': not a decimal"),
    (HEADER + f"2026-03-01,00017,1.2345,{SENTINEL},true,2026-03-01T08:00:00Z,1\n",
     r"field 'reading': more fraction digits than the scale"),
    (HEADER + f"{SENTINEL},00017,1,,true,2026-03-01T08:00:00Z,1\n", r"field 'business_date': not a YYYY-MM-DD date"),
    (HEADER + ",00017,1,,true,2026-03-01T08:00:00Z,1\n", r"field 'business_date': null in a non-nullable field"),
])
def test_csv_refusals_name_the_problem_never_the_value(tmp_path: Path, text: str | bytes, message: str) -> None:
    with pytest.raises(DatasetError, match=message) as raised:
        read_dataset(_csv(tmp_path, text), "2026-03-01", "2026-03-02")
    assert SENTINEL not in str(raised.value)


def test_an_empty_csv_or_a_header_alone_holds_no_row(tmp_path: Path) -> None:
    assert read_dataset(_csv(tmp_path, HEADER), "2026-03-01", "2026-03-02").row_count("2026-03-01") == 0
    assert read_dataset(_csv(tmp_path, ""), "2026-03-01", "2026-03-02").row_count("2026-03-01") == 0


def test_a_source_over_the_size_limit_is_refused_before_reading(tmp_path: Path) -> None:
    workload = _csv(tmp_path, HEADER)
    with (tmp_path / "workloads" / "data.csv").open("r+b") as handle:
        handle.truncate(MAX_SOURCE_BYTES + 1)  # sparse: no 256 MiB written
    with pytest.raises(DatasetError, match="larger than"):
        read_dataset(workload, "2026-03-01", "2026-03-02")


@pytest.mark.parametrize(("scope_from", "scope_to"), [
    ("2026-03-02", "2026-03-01"), ("2026-03-01", "2026-03-01"), ("2026-02-30", "2026-03-01"),
    ("2026-3-1", "2026-03-02"), ("2026-03-01", "tomorrow"),
])
def test_a_scope_that_is_no_range_of_days_is_refused(tmp_path: Path, scope_from: str, scope_to: str) -> None:
    with pytest.raises(DatasetError, match="not a non-empty range of YYYY-MM-DD days"):
        read_dataset(_csv(tmp_path, HEADER), scope_from, scope_to)


def test_sources_the_harness_cannot_read_are_refused(tmp_path: Path) -> None:
    workload = _write(tmp_path, {"type": "synthetic", "seed": 1, "min_rows_per_day": 1, "max_rows_per_day": 2})
    with pytest.raises(DatasetError, match="reads csv_file, ndjson_file and sqlite_query sources, not synthetic"):
        read_dataset(workload, "2026-03-01", "2026-03-02")
    workload = _write(tmp_path, None)  # type: ignore[arg-type]
    with pytest.raises(DatasetError, match="not none"):
        read_dataset(workload, "2026-03-01", "2026-03-02")


def test_workload_and_mapping_refusals(tmp_path: Path) -> None:
    workload = _csv(tmp_path, HEADER)
    with pytest.raises(DatasetError, match=r"test\.mapping\.v1\.yaml: cannot be read"):
        read_dataset(workload, "2026-03-01", "2026-03-02", mappings_dir=tmp_path / "elsewhere")
    (tmp_path / "mappings" / "test.mapping.v1.yaml").write_text("id: x\n")
    with pytest.raises(DatasetError, match=r"not a payload mapping \(\d+ problem\(s\)\)"):
        read_dataset(workload, "2026-03-01", "2026-03-02")
    workload.write_text("logical_route_id: x\n")
    with pytest.raises(DatasetError, match=r"not a workload \(\d+ problem\(s\)\)"):
        read_dataset(workload, "2026-03-01", "2026-03-02")
    workload.write_text("a: 1\na: 2\n")
    with pytest.raises(DatasetError, match="duplicate key 'a'"):
        read_dataset(workload, "2026-03-01", "2026-03-02")


def test_a_mapping_dir_can_be_given(tmp_path: Path) -> None:
    workload = _csv(tmp_path, HEADER + ROW1)
    moved = tmp_path / "moved"
    (tmp_path / "mappings").rename(moved)
    assert read_dataset(workload, "2026-03-01", "2026-03-02", mappings_dir=moved).row_count("2026-03-01") == 1


# --- the receiver's rows ----------------------------------------------------------------------------------


@pytest.fixture
def measurements(tmp_path: Path) -> Any:
    return read_dataset(_csv(tmp_path, HEADER + ROW1 + ROW2), "2026-03-01", "2026-03-03")


RECEIVED = {"business_date": "2026-03-01", "station_id": "00017", "reading": "12.5", "label": "Москва",
            "valid": "1", "observed_at": "2026-03-01T05:00:00.000000Z", "sample_count": "12"}


def test_a_receiver_row_in_another_honest_encoding_is_the_source_row(measurements: Any) -> None:
    assert measurements.receiver_row(RECEIVED) in measurements.rows_of("2026-03-01")
    again = {**RECEIVED, "reading": "12.500", "valid": "true", "observed_at": "2026-03-01T08:00:00+03:00"}
    assert measurements.receiver_row(again) == measurements.receiver_row(RECEIVED)


def test_a_null_the_receiver_holds_reads_as_null(measurements: Any) -> None:
    row = {"business_date": "2026-03-02", "station_id": "00042", "reading": "-0.125", "label": None,
           "valid": "0", "observed_at": "2026-03-02T06:30:00Z", "sample_count": None}
    assert measurements.receiver_row(row) in measurements.rows_of("2026-03-02")
    assert measurements.receiver_row({**row, "label": ""}) in measurements.rows_of("2026-03-02")
    absent = {key: value for key, value in row.items() if key not in ("label", "sample_count")}
    assert measurements.receiver_row(absent) in measurements.rows_of("2026-03-02")  # a nullable field left out


@pytest.mark.parametrize("change", [
    {"reading": "12.501"}, {"station_id": "17"}, {"observed_at": "2026-03-01T08:00:00Z"}, {"valid": "0"},
    {"sample_count": "13"}, {"label": None},
])
def test_a_changed_value_is_another_row(measurements: Any, change: dict[str, str | None]) -> None:
    row = measurements.receiver_row({**RECEIVED, **change})
    assert row is not None and row not in measurements.rows_of("2026-03-01")


@pytest.mark.parametrize("change", [
    {"extra": "1"}, {"reading": "twelve"}, {"valid": "yes"}, {"observed_at": "2026-03-01T05:00:00"},
    {"business_date": None}, {"station_id": None},
])
def test_a_row_that_does_not_read_is_none(measurements: Any, change: dict[str, str | None]) -> None:
    assert measurements.receiver_row({**RECEIVED, **change}) is None


def test_digests_name_the_content_without_holding_it(measurements: Any, tmp_path: Path) -> None:
    assert measurements.digest() == read_dataset(
        _csv(tmp_path / "again", HEADER + ROW2 + ROW1), "2026-03-01", "2026-03-03").digest()
    changed = read_dataset(_csv(tmp_path / "changed", HEADER + ROW1.replace("12.500", "12.501") + ROW2),
                           "2026-03-01", "2026-03-03")
    assert changed.digest() != measurements.digest() and changed.digest().startswith("sha256:")
    assert "Москва" not in measurements.digest()
    rows = measurements.rows_of("2026-03-01")
    assert row_digest(rows) == row_digest(Counter(dict(rows))) != row_digest(rows + rows)
    assert row_digest(Counter()) != row_digest(rows)


def test_day_range_is_half_open() -> None:
    assert day_range("2026-02-27", "2026-03-02") == ("2026-02-27", "2026-02-28", "2026-03-01")
    assert day_range("2026-03-01", "2026-03-01") == ()
    with pytest.raises(ValueError):
        day_range("2026-02-30", "2026-03-02")
