"""Deterministic codecs: golden digests, exact bytes, null vs empty, stability across processes."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sink.artifacts import LocalArtifactStore
from sink.payload.compression import codec_identity, gzip_stream
from tests.payload.pl_golden import VARIANTS, digests
from tests.payload.pl_helpers import REPO, bundled_plan, seal, variant, wire_bytes

GOLDEN = json.loads((Path(__file__).with_name("golden_digests.json")).read_text(encoding="utf-8"))


def _payload(name: str, tmp_path: Path) -> bytes:
    workload, body, mapping = VARIANTS[name]
    plan = variant(bundled_plan(workload), body=body, mapping=mapping)
    store = LocalArtifactStore(tmp_path)
    child = seal(plan, store).children[0]
    data = b"".join(store.open(child.payload_digest).chunks())
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def test_golden_digests_of_every_codec() -> None:
    assert digests() == GOLDEN


def test_golden_digests_hold_across_processes_and_hash_seeds() -> None:
    outputs = set()
    for seed in ("0", "7", "4242"):
        done = subprocess.run([sys.executable, "-m", "tests.payload.pl_golden"], capture_output=True, text=True,
                              timeout=120, cwd=REPO, env={**os.environ, "PYTHONHASHSEED": seed}, check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop()) == GOLDEN


def test_csv_bytes_bom_lf_null_text_and_empty_string(tmp_path: Path) -> None:
    text = _payload("multipart_csv_gzip1_bom_lf_nullN", tmp_path).decode("utf-8")
    assert text == (
        "\ufeffbusiness_date,station_id,reading,label,valid,observed_at,sample_count\n"
        "2026-03-01,00017,12.500,Москва-Север,true,2026-03-01T05:00:00Z,12\n"
        '2026-03-01,00042,-0.125,"",false,2026-03-01T08:00:00Z,\\N\n'
        '2026-03-02,00100,0.000,"Zürich ""Ost"", 東京\nline",true,2026-03-02T05:00:00Z,-3\n'
        "2026-03-02,007,1000.000,\\N,true,2026-03-02T23:59:59Z,0\n"
        "2026-03-03,00001,0.001,Ελλάδα,false,2026-03-03T06:30:00Z,99999999999\n"
    )


def test_csv_without_header_with_semicolons_and_numeric_booleans(tmp_path: Path) -> None:
    lines = _payload("multipart_csv_plain_semicolon_10", tmp_path).decode("utf-8").split("\r\n")
    assert lines[0] == "2026-03-01;00017;12.500;Москва-Север;1;2026-03-01T05:00:00Z;12"
    assert lines[1] == "2026-03-01;00042;-0.125;;0;2026-03-01T08:00:00Z;"


def test_json_numbers_and_ascii_escaping_keep_null_and_empty_apart(tmp_path: Path) -> None:
    data = _payload("json_array_numbers_ascii", tmp_path)
    assert data.isascii()
    rows = json.loads(data)
    assert [row["label"] for row in rows[:2]] == ["Москва-Север", ""]
    assert rows[3]["label"] is None
    assert b'"reading":12.500,' in data and b'"reading":1000.000,' in data


def test_ndjson_null_omit_drops_only_null_fields(tmp_path: Path) -> None:
    lines = _payload("multipart_ndjson_gzip9", tmp_path).decode("utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert "sample_count" not in rows[1] and rows[1]["label"] == ""
    assert list(rows[0]) == ["business_date", "station_id", "reading", "label", "valid", "observed_at",
                             "sample_count"]


@pytest.mark.parametrize("precision", ["milliseconds", "microseconds"])
def test_timestamp_precision_is_profile_owned(tmp_path: Path, precision: str) -> None:
    from tests.payload.pl_helpers import GOLDEN_RECORDS

    records = [dict(GOLDEN_RECORDS[0], observed_at="2026-03-01T08:00:00.250+03:00")]
    plan = variant(bundled_plan("measurements-sync"), body={"json_format": {"timestamp_precision": precision}})
    store = LocalArtifactStore(tmp_path)
    child = seal(plan, store, records).children[0]
    row = json.loads(wire_bytes(store, child.manifest_ref))[0]
    expected = "2026-03-01T05:00:00.250Z" if precision == "milliseconds" else "2026-03-01T05:00:00.250000Z"
    assert row["observed_at"] == expected


def test_gzip_stream_is_deterministic_and_round_trips() -> None:
    data = ("Привет,мир\r\n" * 5000).encode()
    one = b"".join(gzip_stream([data], 6))
    two = b"".join(gzip_stream([data[:7], data[7:100], data[100:]], 6))
    assert one == two
    assert gzip.decompress(one) == data
    assert one[4:8] == b"\x00\x00\x00\x00" and one[9] == 255  # mtime 0, OS unknown
    assert one[10:] == gzip.compress(data, 6, mtime=0)[10:]  # same deflate stream as the stdlib
    assert hashlib.sha256(one).hexdigest() == hashlib.sha256(b"".join(gzip_stream([data], 6))).hexdigest()


def test_codec_identity_pins_library_and_level() -> None:
    identity = codec_identity(6)
    assert identity["implementation"] == "zlib" and identity["level"] == 6
    assert identity["library_version"] not in ("", "None")
    assert identity["header"] == {"mtime": 0, "os": 255, "flags": 0}


def test_an_alternative_deflate_is_pinned_by_name_and_version_or_refused() -> None:
    from sink.payload.compression import CompressionUnavailable

    data = ("строка,1\r\n" * 2000).encode()
    try:
        identity = codec_identity(1, "zlib-ng")
    except CompressionUnavailable as exc:
        assert exc.code == "payload.codec_unavailable"
        return
    assert identity["implementation"] == "zlib-ng" and identity != codec_identity(1)
    assert gzip.decompress(b"".join(gzip_stream([data], 1, "zlib-ng"))) == data
    with pytest.raises(CompressionUnavailable):
        codec_identity(1, "brotli")
