"""Freezing a source boundary: canonical rows, histogram, consistency checks, hostile input."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from sink.artifacts import LocalArtifactStore, read_document
from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.source import CsvFileSource, NdjsonFileSource, SqliteQuerySource, SyntheticSource
from sink.source.databases import SqliteSourcePort
from sink.source.errors import SourceError
from sink.source.files import FileSourcePort
from sink.source.freeze import PARENT_SCHEMA_ID
from sink.source.synthetic import SyntheticSourcePort
from tests.source.so_helpers import CSV_HEADER, GOOD_ROW, REPO, SENTINEL, WORKLOADS, run_freeze

FIXTURE = WORKLOADS / "data" / "measurements.csv"


def _csv_port(path: Path, **options: object) -> FileSourcePort:
    return FileSourcePort(CsvFileSource(type="csv_file", path=str(path), **options), path.parent)  # type: ignore[arg-type]


def _write(tmp_path: Path, body: str | bytes, name: str = "m.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(body if isinstance(body, bytes) else (CSV_HEADER + body).encode())
    return path


def test_fixture_freezes_with_histogram_and_manifest(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    parent = run_freeze(_csv_port(FIXTURE), store)
    assert parent.row_count == 8
    assert [(d.day.day, d.rows) for d in parent.days] == [(1, 3), (2, 2), (3, 1), (4, 2)]
    assert [d.row_start for d in parent.days] == [0, 3, 5, 6]
    assert sum(d.decoded_bytes for d in parent.days) == parent.rows_bytes
    document = read_document(store, parent.digest, PARENT_SCHEMA_ID)
    assert document["split_keys"] == ["business_date"] and document["complete"] is True
    assert document["source"]["version"].startswith("file:sha256:")
    assert document["refs"] == [parent.rows_ref]


def test_row_order_of_the_source_does_not_change_the_parent(tmp_path: Path) -> None:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)
    reordered = _write(tmp_path, "".join([lines[0], *reversed(lines[1:])]).encode())
    one = run_freeze(_csv_port(FIXTURE), LocalArtifactStore(tmp_path / "a"))
    two = run_freeze(_csv_port(reordered), LocalArtifactStore(tmp_path / "b"))
    assert one.rows_ref == two.rows_ref
    assert one.source_version != two.source_version


def test_ndjson_and_sqlite_sources_give_the_same_rows_as_csv(tmp_path: Path) -> None:
    csv_parent = run_freeze(_csv_port(FIXTURE), LocalArtifactStore(tmp_path / "csv"))
    ndjson = tmp_path / "m.ndjson"
    database = tmp_path / "m.db"
    conn = sqlite3.connect(database)
    conn.execute("CREATE TABLE m (business_date, station_id, reading, label, valid, observed_at, sample_count)")
    with ndjson.open("w", encoding="utf-8") as out:
        header = CSV_HEADER.strip().split(",")
        for line in FIXTURE.read_text(encoding="utf-8").splitlines()[1:]:
            values = next(csv.reader([line]))
            record = {k: (v if v != "" else None) for k, v in zip(header, values, strict=True)}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            conn.execute("INSERT INTO m VALUES (?, ?, ?, ?, ?, ?, ?)", list(record.values()))
    conn.commit()
    conn.close()
    nd_parent = run_freeze(FileSourcePort(NdjsonFileSource(type="ndjson_file", path="m.ndjson"), tmp_path),
                           LocalArtifactStore(tmp_path / "nd"))
    query = "SELECT * FROM m WHERE business_date >= :scope_from AND business_date < :scope_to"
    sq_parent = run_freeze(SqliteSourcePort(SqliteQuerySource(type="sqlite_query", path="m.db", query=query),
                                            tmp_path), LocalArtifactStore(tmp_path / "sq"))
    assert csv_parent.rows_ref == nd_parent.rows_ref == sq_parent.rows_ref


def test_sqlite_reads_one_transaction(tmp_path: Path) -> None:
    database = tmp_path / "m.db"
    conn = sqlite3.connect(database)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE m (business_date, station_id, reading, label, valid, observed_at, sample_count)")
    row = ("2026-03-01", "00017", "1.000", None, "true", "2026-03-01T00:00:00Z", "1")
    conn.executemany("INSERT INTO m VALUES (?, ?, ?, ?, ?, ?, ?)", [row] * 5000)
    conn.commit()
    port = SqliteSourcePort(SqliteQuerySource(type="sqlite_query", path="m.db", query="SELECT * FROM m"), tmp_path)
    snapshot = port.open(date(2026, 3, 1), date(2026, 3, 2))
    records = snapshot.records()
    next(records)
    conn.executemany("INSERT INTO m VALUES (?, ?, ?, ?, ?, ?, ?)", [row] * 100)
    conn.commit()
    assert 1 + sum(1 for _ in records) == 5000
    snapshot.finish()
    snapshot.close()


def test_file_changed_during_read_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD_ROW * 3)
    snapshot = _csv_port(path).open(date(2026, 3, 1), date(2026, 3, 2))
    list(snapshot.records())
    path.write_bytes(path.read_bytes().replace(b"12.500", b"12.600"))
    with pytest.raises(SourceError) as caught:
        snapshot.finish()
    snapshot.close()
    assert caught.value.code == "source.changed_during_read"


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        (CSV_HEADER.encode() + b"2026-03-01,00017,1.0,\xff\xfe,true,2026-03-01T00:00:00Z,1\n",
         "source.invalid_utf8", None),
        ("2026-03-01,00017,abc,x,true,2026-03-01T00:00:00Z,1\n", "source.type_drift", "reading"),
        ("2026-03-01,00017,1.0001,x,true,2026-03-01T00:00:00Z,1\n", "source.precision_loss", "reading"),
        ("2026-03-01,00017,1.0,x,true,2026-03-01T00:00:00,1\n", "source.type_drift", "observed_at"),
        ("2026-03-01,,1.0,x,true,2026-03-01T00:00:00Z,1\n", "source.null_not_allowed", "station_id"),
        ("2026-03-01,00017,1.0,x,yes,2026-03-01T00:00:00Z,1\n", "source.type_drift", "valid"),
        ("2026-03-01,00017,1.0,x,true,2026-03-01T00:00:00Z,007\n", "source.type_drift", "sample_count"),
        ("2026-02-30,00017,1.0,x,true,2026-03-01T00:00:00Z,1\n", "source.type_drift", "business_date"),
        ("2026-03-01,00017,1.0,x,true\n", "source.malformed_record", None),
        ("2026-03-01,00017,1.000,x,true,2026-03-01T00:00:00.5Z,1\n", "source.precision_loss", "observed_at"),
    ],
)
def test_invalid_values_fail_with_field_evidence_and_nothing_stored(
    tmp_path: Path, body: str | bytes, code: str, field: str | None
) -> None:
    store = LocalArtifactStore(tmp_path / "store")
    path = _write(tmp_path, body)
    with pytest.raises(SourceError) as caught:
        run_freeze(_csv_port(path), store)
    assert caught.value.code == code
    assert caught.value.evidence.get("field") == field
    assert list(store.list_refs()) == []


def test_messages_never_carry_the_value(tmp_path: Path) -> None:
    path = _write(tmp_path, f"2026-03-01,00017,{SENTINEL},x,true,2026-03-01T00:00:00Z,1\n")
    with pytest.raises(SourceError) as caught:
        run_freeze(_csv_port(path), LocalArtifactStore(tmp_path / "s"))
    assert SENTINEL not in str(caught.value) and SENTINEL not in json.dumps(caught.value.to_dict())


def test_unknown_and_missing_columns(tmp_path: Path) -> None:
    extra = _write(tmp_path, (CSV_HEADER.strip() + ",secret\n" + GOOD_ROW.strip() + ",x\n").encode(), "extra.csv")
    missing = _write(tmp_path, b"station_id,reading\n00017,1.0\n", "missing.csv")
    for path, code in ((extra, "source.unknown_field"), (missing, "source.missing_scope_field")):
        with pytest.raises(SourceError) as caught:
            run_freeze(_csv_port(path), LocalArtifactStore(tmp_path / path.stem))
        assert caught.value.code == code


def test_huge_single_field_fails_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    with path.open("wb") as out:
        out.write(CSV_HEADER.encode() + b"2026-03-01,00017,1.0,")
        block = b"y" * (1 << 20)
        for _ in range(100):
            out.write(block)
        out.write(b",true,2026-03-01T00:00:00Z,1\n")
    # In a subprocess capped at 300 MB of address space: a whole-field read would need more.
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))\n"
        "from pathlib import Path\n"
        "from sink.artifacts import LocalArtifactStore\n"
        "from sink.source.errors import SourceError\n"
        "from tests.source.test_so_freeze import _csv_port\n"
        "from tests.source.so_helpers import run_freeze\n"
        "try:\n"
        f"    run_freeze(_csv_port(Path({str(path)!r})), LocalArtifactStore({str(tmp_path / 's')!r}))\n"
        "except SourceError as exc:\n"
        "    print(exc.code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                          check=False)
    assert done.stdout.strip() == "source.field_too_large", done.stderr[-2000:]


def test_a_day_above_the_hard_limit_is_scope_exceeds_limit(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD_ROW * 50)
    with pytest.raises(DeliveryError) as caught:
        run_freeze(_csv_port(path), LocalArtifactStore(tmp_path / "s"), max_day_bytes=500)
    assert caught.value.code is ErrorCode.SCOPE_EXCEEDS_LIMIT


def test_synthetic_source_is_stable_across_processes_and_hash_seeds(tmp_path: Path) -> None:
    code = (
        "from tests.source.so_helpers import run_freeze\n"
        "from sink.artifacts import LocalArtifactStore\n"
        "from sink.contracts.source import SyntheticSource\n"
        "from sink.source.synthetic import SyntheticSourcePort\n"
        "import sys, tempfile\n"
        "spec = SyntheticSource(type='synthetic', seed=7, min_rows_per_day=10, max_rows_per_day=300,"
        " distribution='skewed')\n"
        "with tempfile.TemporaryDirectory() as d:\n"
        "    print(run_freeze(SyntheticSourcePort(spec), LocalArtifactStore(d)).rows_ref)\n"
    )
    digests = set()
    for seed in ("0", "1", "12345"):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                              env={**os.environ, "PYTHONHASHSEED": seed}, check=True)
        digests.add(done.stdout.strip())
    spec = SyntheticSource(type="synthetic", seed=7, min_rows_per_day=10, max_rows_per_day=300, distribution="skewed")
    digests.add(run_freeze(SyntheticSourcePort(spec), LocalArtifactStore(tmp_path)).rows_ref)
    assert len(digests) == 1
