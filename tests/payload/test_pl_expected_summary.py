"""The sealer records, per child, the ``mock-receiver.rows.v2`` digest the profile's summary query
must answer, composed from per-day sums of the parent's rows as the receiver reads them (no second
pass over the payload when verifying). Checked against the receiver's own parser and digest of the
very body sealed: two implementations. The freeze itself knows nothing of receiver summaries."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from mock_receiver.behaviour import Limits
from mock_receiver.canonical import multiset_sum_digest
from mock_receiver.payloads import decode_body
from sink.artifacts import LocalArtifactStore
from sink.artifacts.documents import read_document
from sink.artifacts.port import ArtifactCorrupt
from sink.contracts.profile_request import CsvDialect, PayloadFormat
from sink.contracts.profile_verification import MOCK_RECEIVER_ROWS_V1, MOCK_RECEIVER_ROWS_V2
from sink.contracts.source import CsvFileSource
from sink.payload.body import PAYLOAD_SCHEMA_ID
from sink.payload.encoding import PayloadEncoding, RowEncoder, payload_encoding
from sink.payload.expected_summary import ExpectedSummaries
from sink.payload.parent import PARENT_SCHEMA_ID, DaySlice, FrozenParent
from sink.payload.rendering import RequestSymbols, render_request
from sink.payload.sealer import ChildSpec, StreamingSealer
from sink.source.files import FileSourcePort
from sink.source.freeze import freeze
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


def _sealer(store: LocalArtifactStore, parent: FrozenParent, encoder: RowEncoder,
            scheme: str | None = MOCK_RECEIVER_ROWS_V2) -> StreamingSealer:
    return StreamingSealer(store, parent, encoder, summary_scheme=scheme)


def _spec(workload: str, days: tuple[DaySlice, ...]) -> ChildSpec:
    compiled = plan(workload)
    scope_from, scope_to = days[0].day, days[-1].day.fromordinal(days[-1].day.toordinal() + 1)
    key = "sha256:" + "ab" * 32
    rendered = render_request(compiled, RequestSymbols("measurements", key, key, scope_from, scope_to))
    return ChildSpec(0, scope_from, scope_to, days[0].row_start, days[-1].row_start + days[-1].rows, key, key,
                     rendered)


@pytest.mark.parametrize(("workload", "fmt"), [("measurements-sync", "json_array"),
                                                ("measurements-async", "csv"),
                                                ("measurements-sync", "ndjson")])
def test_expected_summary_is_the_receivers_own_digest_of_the_same_body(tmp_path: Path, workload: str,
                                                                       fmt: str) -> None:
    compiled = plan(workload)
    base = payload_encoding(compiled.operation)
    encoding = base if base.format == fmt else PayloadEncoding(cast(PayloadFormat, fmt), "none", 0, None, base.json)
    parent, encoder, store = _freeze(tmp_path, encoding, workload)
    sealer = _sealer(store, parent, encoder)
    days = parent.days
    for start in range(len(days)):
        for end in range(start + 1, len(days) + 1):
            chosen = days[start:end]
            sealed = sealer.seal(_spec(workload, chosen))
            received = decode_body(_body_of_days(store, parent, encoder, chosen), CONTENT_TYPES[fmt], None,
                                   Limits())
            assert sealed.expected_summary_digest == multiset_sum_digest(received.encoded)
            manifest = read_document(store, sealed.manifest_ref, PAYLOAD_SCHEMA_ID)
            assert manifest["expected_summary"] == {"scheme": MOCK_RECEIVER_ROWS_V2, "rows": len(received.encoded),
                                                    "content_digest": sealed.expected_summary_digest}


def test_no_expected_summary_without_a_precomputable_scheme(tmp_path: Path) -> None:
    parent, encoder, store = _freeze(tmp_path, None, "measurements-async")
    spec = _spec("measurements-async", parent.days)
    for scheme in (None, MOCK_RECEIVER_ROWS_V1):
        sealed = _sealer(store, parent, encoder, scheme).seal(spec)
        assert sealed.expected_summary_digest is None
        assert "expected_summary" not in read_document(store, sealed.manifest_ref, PAYLOAD_SCHEMA_ID)
    # The receiver reads a header-less body's first row as its header: a day alone has no reading.
    headerless, encoder, store = _freeze(tmp_path / "h", PayloadEncoding("csv", "none", 0, CsvDialect(header=False),
                                                                         None), "measurements-async")
    assert _sealer(store, headerless, encoder).seal(spec).expected_summary_digest is None


def test_the_parent_carries_no_receiver_summary(tmp_path: Path) -> None:
    parent, _, store = _freeze(tmp_path, None, "measurements-async")
    document = read_document(store, parent.digest, PARENT_SCHEMA_ID)
    assert all(set(day) == {"day", "rows", "decoded_bytes", "row_start", "byte_start", "digest"}
               for day in document["days"])


def test_a_corrupt_day_is_refused_while_summing(tmp_path: Path) -> None:
    parent, encoder, store = _freeze(tmp_path, None, "measurements-async")
    day = parent.days[0]
    forged = FrozenParent(parent.digest, parent.rows_ref, parent.row_count, parent.rows_bytes, parent.scope_from,
                          parent.scope_to, (DaySlice(day.day, day.rows, day.decoded_bytes, day.row_start,
                                                     day.byte_start, "sha256:" + "0" * 64), *parent.days[1:]),
                          parent.fixed_overhead_bytes, parent.source_version)
    assert ExpectedSummaries(store, parent, encoder, MOCK_RECEIVER_ROWS_V2).digest(parent.days[:1])
    with pytest.raises(ArtifactCorrupt):
        ExpectedSummaries(store, forged, encoder, MOCK_RECEIVER_ROWS_V2).digest(forged.days[:1])
