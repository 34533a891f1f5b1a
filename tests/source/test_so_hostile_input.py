"""Hostile source values end as one typed SourceError with a stable code, never a crash.

Each case is a class of bad input (unpaired surrogates, numbers beyond any bound, nesting beyond
the parser, instants beyond year 9999, repeated member names) read through every reader it
applies to. The sentinel travels inside the offending value: no message or evidence may show it.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from sink.artifacts import LocalArtifactStore
from sink.contracts.source import CsvFileSource, NdjsonFileSource, SqliteQuerySource
from sink.payload.encoding import RowEncoder, payload_encoding
from sink.source.databases import SqliteSourcePort
from sink.source.errors import SourceError
from sink.source.files import FileSourcePort
from sink.source.freeze import FrozenParent, freeze
from sink.source.ndjson import MAX_DEPTH
from sink.source.normalize import RowNormalizer
from tests.source.so_helpers import CSV_HEADER, FROM, REPO, SENTINEL, TO, plan, run_freeze

GOOD = {"business_date": "2026-03-01", "station_id": "00017", "reading": "12.500", "label": "x",
        "valid": True, "observed_at": "2026-03-01T08:00:00+03:00", "sample_count": 12}


def _line(**members: object) -> str:
    """The good record with members replaced; a str value starting with '@' is raw JSON text."""
    parts = []
    for key, value in {**GOOD, **members}.items():
        text = value[1:] if isinstance(value, str) and value.startswith("@") else json.dumps(value)
        parts.append(f"{json.dumps(key)}: {text}")
    return "{" + ", ".join(parts) + "}"


def _freeze_ndjson(path: Path, store: LocalArtifactStore, ignore: tuple[str, ...] = ()) -> FrozenParent:
    compiled = plan()
    assert compiled.mapping is not None
    mapping = compiled.mapping.model_copy(update={"ignore_source_fields": list(ignore)})
    return freeze(snapshot_port=FileSourcePort(NdjsonFileSource(type="ndjson_file", path=path.name), path.parent),
                  normalizer=RowNormalizer(mapping), encoder=RowEncoder(mapping, payload_encoding(compiled.operation)),
                  scope_from=FROM, scope_to=TO, store=store, max_day_bytes=compiled.operation.limits.max_decoded_bytes,
                  compiled_plan_digest=compiled.compiled_plan_digest)


def _ndjson_error(tmp_path: Path, line: str, *, ignore: tuple[str, ...] = ()) -> SourceError:
    path = tmp_path / "m.ndjson"
    path.write_text(_line() + "\n" + line + "\n", encoding="utf-8")
    store = LocalArtifactStore(tmp_path / "store")
    with pytest.raises(SourceError) as caught:
        _freeze_ndjson(path, store, ignore)
    assert list(store.list_refs()) == []
    _assert_no_sentinel(caught.value)
    return caught.value


def _assert_no_sentinel(error: SourceError) -> None:
    shown = str(error) + json.dumps(error.to_dict())
    assert SENTINEL not in shown
    shown.encode("utf-8")  # printable on any terminal and in any JSON: no lone surrogate survives


def _nested(depth: int, kind: str = "[") -> str:
    close = "]" if kind == "[" else "}"
    opening = "[" if kind == "[" else '{"k": '
    return "@" + opening * depth + json.dumps(SENTINEL) + close * depth


@pytest.mark.parametrize(
    ("members", "code", "field"),
    [
        ({"label": "@" + json.dumps(SENTINEL)[:-1] + '\\ud800"'}, "source.invalid_unicode", "label"),
        ({"label": "@" + json.dumps(SENTINEL)[:-1] + '\\udfff\\ud800"'}, "source.invalid_unicode", "label"),
        ({"sample_count": "@" + "7" * 5000}, "source.number_too_large", "sample_count"),
        ({"sample_count": "@-" + "7" * 4301}, "source.number_too_large", "sample_count"),
        ({"sample_count": "@" + "1" * 41}, "source.number_too_large", "sample_count"),
        ({"reading": "@" + "1" * 200 + ".5"}, "source.number_too_large", "reading"),
        ({"reading": "@1E+999999999999"}, "source.number_too_large", "reading"),
        ({"reading": "@1E-999999999999"}, "source.number_too_large", "reading"),
        ({"reading": "@NaN"}, "source.malformed_record", None),
        ({"reading": "@-Infinity"}, "source.malformed_record", None),
        ({"label": _nested(3000)}, "source.nesting_too_deep", None),
        ({"label": _nested(3000, "{")}, "source.nesting_too_deep", None),
        ({"label": _nested(MAX_DEPTH)}, "source.nesting_too_deep", None),
        ({"label": _nested(2)}, "source.type_drift", "label"),
        ({"observed_at": "9999-12-31T23:59:59-23:59"}, "source.out_of_range", "observed_at"),
        ({"observed_at": "0001-01-01T00:00:00+00:01"}, "source.out_of_range", "observed_at"),
    ],
)
def test_ndjson_hostile_values(tmp_path: Path, members: dict[str, object], code: str, field: str | None) -> None:
    error = _ndjson_error(tmp_path, _line(**members))
    assert (error.code, error.evidence.get("field"), error.evidence.get("record")) == (code, field, 2)


def test_ndjson_repeated_member_names_are_refused_at_any_depth(tmp_path: Path) -> None:
    top = _line()[:-1] + f', "label": {json.dumps(SENTINEL)}}}'
    error = _ndjson_error(tmp_path, top)
    assert (error.code, error.evidence.get("field")) == ("source.duplicate_field", "label")
    nested = _line(extra=f'@{{"a": {json.dumps(SENTINEL)}, "a": 2}}')
    error = _ndjson_error(tmp_path, nested, ignore=("extra",))
    assert (error.code, error.evidence.get("field")) == ("source.duplicate_field", "a")


def test_ndjson_bounds_are_exact_and_apply_to_ignored_members(tmp_path: Path) -> None:
    # At the bound (the record's object is a level) an ignored member is read and dropped.
    path = tmp_path / "ok.ndjson"
    path.write_text(_line(extra=_nested(MAX_DEPTH - 1), other="@" + "9" * 100) + "\n", encoding="utf-8")
    assert _freeze_ndjson(path, LocalArtifactStore(tmp_path / "s"), ("extra", "other")).row_count == 1
    # One past it, even in an ignored member, is refused by the reader.
    error = _ndjson_error(tmp_path, _line(extra=_nested(MAX_DEPTH)), ignore=("extra",))
    assert error.code == "source.nesting_too_deep"
    # A long number in an ignored member is dropped unread; in a mapped one it is refused.
    assert _ndjson_error(tmp_path, _line(other="@" + "9" * 5000, label=None, station_id=None),
                         ignore=("other",)).code == "source.null_not_allowed"


def test_surrogate_pairs_and_escaped_backslashes_are_text(tmp_path: Path) -> None:
    path = tmp_path / "ok.ndjson"
    path.write_text(_line(label="@\"\\ud83d\\ude00\"") + "\n" + _line(label="@\"\\\\ud800\"") + "\n",
                    encoding="utf-8")
    parent = run_freeze(FileSourcePort(NdjsonFileSource(type="ndjson_file", path=path.name), tmp_path),
                        LocalArtifactStore(tmp_path / "s"))
    rows = b"".join(LocalArtifactStore(tmp_path / "s").open(parent.rows_ref).chunks()).decode("utf-8")
    assert "\U0001f600" in rows and "\\ud800" in rows


def test_a_hostile_member_name_is_shown_escaped_and_cut(tmp_path: Path) -> None:
    # A member name is a field name, so it is evidence; escaped (printable anywhere) and cut short.
    error = _ndjson_error(tmp_path, _line()[:-1] + ', "\\ud800\\u0007' + "z" * 500 + '": 1}')
    assert error.code == "source.invalid_unicode"
    field = str(error.evidence["field"])
    assert field.startswith("\\ud800\\x07") and len(field) <= 64


def _csv_error(tmp_path: Path, body: str) -> SourceError:
    path = tmp_path / "m.csv"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        run_freeze(FileSourcePort(CsvFileSource(type="csv_file", path=path.name), tmp_path),
                   LocalArtifactStore(tmp_path / "s"))
    _assert_no_sentinel(caught.value)
    return caught.value


@pytest.mark.parametrize(
    ("row", "code", "field"),
    [
        ("2026-03-01,00017,1.0,x,true,9999-12-31T23:59:59-23:59,1", "source.out_of_range", "observed_at"),
        ("2026-03-01,00017,1.0,x,true,0001-01-01T00:00:00+23:59,1", "source.out_of_range", "observed_at"),
        ("2026-03-01,00017,1.0,x,true,2026-03-01T00:00:00Z," + "9" * 5000, "source.number_too_large",
         "sample_count"),
        ("2026-03-01,00017,1.0,x,true,2026-03-01T00:00:00Z,-" + "9" * 41, "source.number_too_large",
         "sample_count"),
        ("2026-03-01,00017," + "9" * 60 + ".5,x,true,2026-03-01T00:00:00Z,1", "source.number_too_large", "reading"),
        ("2026-03-01,00017,1.0,x,true,2026-03-01T00:00:00Z,1e5", "source.type_drift", "sample_count"),
    ],
)
def test_csv_hostile_values(tmp_path: Path, row: str, code: str, field: str) -> None:
    error = _csv_error(tmp_path, CSV_HEADER + row.replace(",x,", f",{SENTINEL},") + "\n")
    assert (error.code, error.evidence.get("field"), error.evidence.get("record")) == (code, field, 1)


def test_csv_repeated_header_column_is_a_duplicate_field(tmp_path: Path) -> None:
    error = _csv_error(tmp_path, CSV_HEADER.strip() + ",label\n")
    assert (error.code, error.evidence.get("field")) == ("source.duplicate_field", "label")


def test_sqlite_values_take_the_same_codes(tmp_path: Path) -> None:
    database = tmp_path / "m.db"
    conn = sqlite3.connect(database)
    conn.execute("CREATE TABLE m (business_date, station_id, reading, label, valid, observed_at, sample_count)")
    cases = [("9999-12-31T23:59:59-23:59", "1", "source.out_of_range", "observed_at"),
             ("2026-03-01T00:00:00Z", "9" * 5000, "source.number_too_large", "sample_count"),
             ("2026-03-01T00:00:00Z", 1.5, "source.type_drift", "sample_count")]
    for index, (stamp, count, code, field) in enumerate(cases):
        conn.execute("DELETE FROM m")
        conn.execute("INSERT INTO m VALUES (?, ?, ?, ?, ?, ?, ?)",
                     ("2026-03-01", "00017", "1.0", SENTINEL, "true", stamp, count))
        conn.commit()
        port = SqliteSourcePort(SqliteQuerySource(type="sqlite_query", path="m.db", query="SELECT * FROM m"), tmp_path)
        with pytest.raises(SourceError) as caught:
            run_freeze(port, LocalArtifactStore(tmp_path / f"s{index}"))
        _assert_no_sentinel(caught.value)
        assert (caught.value.code, caught.value.evidence.get("field")) == (code, field)
    conn.close()


def _preview(tmp_path: Path, kind: str, name: str, data: str) -> subprocess.CompletedProcess[str]:
    root = tmp_path / "scenarios"
    for part in ("profiles", "bindings", "workloads", "environments", "mappings"):
        shutil.copytree(REPO / "scenarios" / part, root / part, dirs_exist_ok=True)
    (root / "workloads" / "data" / name).write_text(data, encoding="utf-8")
    workload = root / "workloads" / f"{name}.yaml"
    text = (root / "workloads" / "measurements-async.yaml").read_text(encoding="utf-8")
    workload.write_text(text.replace("type: csv_file", f"type: {kind}").replace("data/measurements.csv",
                                                                               f"data/{name}"), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "sink.cli", "preview", str(workload), "--scope-from",
                           FROM.isoformat(), "--scope-to", TO.isoformat(), "--format", "json"],
                          capture_output=True, text=True, timeout=180, cwd=REPO, env=dict(os.environ), check=False)


def test_the_cli_exits_2_with_the_code_and_no_traceback(tmp_path: Path) -> None:
    cases = [
        ("ndjson_file", "a.ndjson", _line(label="@\"\\ud800\"") + "\n", "source.invalid_unicode"),
        ("ndjson_file", "b.ndjson", _line()[:-1] + ', "\\ud800": 1}\n', "source.invalid_unicode"),
        ("ndjson_file", "c.ndjson", _line(sample_count="@" + "1" * 5000) + "\n", "source.number_too_large"),
        ("ndjson_file", "d.ndjson", _line(label=_nested(3000)) + "\n", "source.nesting_too_deep"),
        ("ndjson_file", "e.ndjson", _line()[:-1] + ', "label": "y"}\n', "source.duplicate_field"),
        ("csv_file", "f.csv", CSV_HEADER + "2026-03-01,00017,1.0,x,true,9999-12-31T23:59:59-23:59,1\n",
         "source.out_of_range"),
    ]
    for kind, name, data, code in cases:
        done = _preview(tmp_path, kind, name, data)
        assert done.returncode == 2, (name, done.stderr[-500:])
        assert f"error[{code}]" in done.stderr + done.stdout, (name, done.stderr[-500:])
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_scope_is_bounded_before_anything_is_read(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text(CSV_HEADER, encoding="utf-8")
    compiled = plan()
    assert compiled.mapping is not None
    for scope_from, scope_to in ((TO, FROM), (FROM, FROM), (date(2020, 1, 1), date(2026, 1, 1))):
        with pytest.raises(SourceError) as caught:
            freeze(snapshot_port=FileSourcePort(CsvFileSource(type="csv_file", path="m.csv"), tmp_path),
                   normalizer=RowNormalizer(compiled.mapping),
                   encoder=RowEncoder(compiled.mapping, payload_encoding(compiled.operation)),
                   scope_from=scope_from, scope_to=scope_to, store=LocalArtifactStore(tmp_path / "s"),
                   max_day_bytes=1 << 20, compiled_plan_digest=compiled.compiled_plan_digest)
        assert caught.value.code == "preparation.unsupported_scope"
