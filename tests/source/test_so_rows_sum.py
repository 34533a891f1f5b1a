"""The frozen parent records, per day, the ``mock-receiver.rows.v2`` sum of its rows as the receiver
reads them, so that a child's expected summary digest is composed from its days (no second pass
over the payload). Checked against the receiver's own parser and digest: two implementations."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from mock_receiver.behaviour import Limits
from mock_receiver.canonical import multiset_sum_digest
from mock_receiver.payloads import decode_body
from sink.artifacts import LocalArtifactStore
from sink.contracts.profile_request import CsvDialect, PayloadFormat
from sink.contracts.source import CsvFileSource
from sink.payload.encoding import PayloadEncoding, RowEncoder, payload_encoding
from sink.payload.summary_digest import RowsSum
from sink.source.files import FileSourcePort
from sink.source.freeze import DaySlice, FrozenParent, freeze
from sink.source.normalize import RowNormalizer
from tests.source.so_helpers import FROM, TO, WORKLOADS, plan

FIXTURE = WORKLOADS / "data" / "measurements.csv"
CONTENT_TYPES = {"csv": "text/csv", "json_array": "application/json", "ndjson": "application/x-ndjson"}


def _freeze(tmp_path: Path, encoding: PayloadEncoding | None,
            workload: str) -> tuple[FrozenParent, RowEncoder, LocalArtifactStore]:
    compiled = plan(workload)
    assert compiled.mapping is not None
    encoder = RowEncoder(compiled.mapping, encoding or payload_encoding(compiled.operation))
    store = LocalArtifactStore(tmp_path / "a")
    port = FileSourcePort(CsvFileSource(type="csv_file", path=str(FIXTURE)), FIXTURE.parent)
    parent = freeze(snapshot_port=port, normalizer=RowNormalizer(compiled.mapping), encoder=encoder,
                    scope_from=FROM, scope_to=TO, store=store,
                    max_day_bytes=compiled.operation.limits.max_decoded_bytes,
                    compiled_plan_digest=compiled.compiled_plan_digest)
    return parent, encoder, store


def _body_of_days(store: LocalArtifactStore, parent: FrozenParent, encoder: RowEncoder,
                  days: tuple[DaySlice, ...]) -> bytes:
    stored = b"".join(b"".join(store.read_range(parent.rows_ref, day.byte_start, day.byte_start + day.decoded_bytes))
                      for day in days)
    if encoder.rows_are_comma_joined:
        stored = stored.rstrip(b"\n").replace(b"\n", b",")
    return encoder.prefix() + stored + encoder.suffix()


@pytest.mark.parametrize(("workload", "fmt"), [("measurements-sync", "json_array"),
                                                ("measurements-async", "csv"),
                                                ("measurements-sync", "ndjson")])
def test_day_sums_compose_to_the_receivers_own_digest_of_the_same_body(tmp_path: Path, workload: str,
                                                                       fmt: str) -> None:
    compiled = plan(workload)
    base = payload_encoding(compiled.operation)
    encoding = base if base.format == fmt else PayloadEncoding(cast(PayloadFormat, fmt), "none", 0, None, base.json)
    parent, encoder, store = _freeze(tmp_path, encoding, workload)
    days = parent.days
    assert all(len(day.rows_sum) == 64 for day in days)
    for start in range(len(days)):
        for end in range(start + 1, len(days) + 1):
            chosen = days[start:end]
            composed = sum((RowsSum(d.rows, int(d.rows_sum, 16)) for d in chosen), RowsSum())
            received = decode_body(_body_of_days(store, parent, encoder, chosen), CONTENT_TYPES[fmt], None,
                                   Limits())
            assert composed.count == len(received.encoded)
            assert composed.digest() == multiset_sum_digest(received.encoded)


def test_a_header_less_csv_day_records_no_sum(tmp_path: Path) -> None:
    # The receiver reads a header-less body's first row as its header: a day alone has no reading.
    encoding = PayloadEncoding("csv", "none", 0, CsvDialect(header=False), None)
    parent, _, _ = _freeze(tmp_path, encoding, "measurements-async")
    assert [day.rows_sum for day in parent.days] == [""] * len(parent.days)
