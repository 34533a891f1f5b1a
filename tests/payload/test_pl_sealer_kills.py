"""Sealer rules that its broader tests leave unguarded (issue 14): the payload manifest records
every fact of the sealed child under its stable names; the multipart boundary is never a
candidate found in the parts or in the payload (also past the two scanned in the first pass), and
running out of candidates is refused; a JSON-array body from stored rows needs each row's newline
and an empty scope seals as ``[]``."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from sink.artifacts import ArtifactCorrupt, LocalArtifactStore, read_document
from sink.payload import multipart
from sink.payload.body import PAYLOAD_SCHEMA_ID
from sink.payload.encoding import RowEncoder, payload_encoding
from sink.payload.sealer import ChildSpec, SealedChild, StreamingSealer
from sink.preparation import SealedTopology
from sink.source.errors import SourceError
from sink.source.freeze import DaySlice, FrozenParent
from tests.payload.pl_helpers import GOLDEN_RECORDS, bundled_plan, seal, variant, wire_bytes

KEY = "sha256:" + "2" * 64
"""A fixed receiver mutation key, so the boundary candidates are known before the rows are made."""
CSV_PLAIN = {"payload_part": {"compression": "none", "content_type": "text/csv"}}


def _expected_manifest(topology: SealedTopology, child: SealedChild, store: LocalArtifactStore) -> dict[str, Any]:
    spec, rendered = child.spec, child.spec.rendered
    body = wire_bytes(store, child.manifest_ref)
    payload = b"".join(store.open(child.payload_digest).chunks())
    prefix, suffix = (body.split(payload)[0], body.split(payload)[1]) if rendered.multipart else (b"", b"")
    encoding = payload_encoding(topology.plan.operation)
    return {
        "schema_id": PAYLOAD_SCHEMA_ID,
        "producer_version": "restproof.sealer.v1",
        "refs": [child.payload_digest, topology.frozen.digest],
        "parent": topology.frozen.digest,
        "scope": {"bounds": "[)", "from": spec.scope_from.isoformat(), "to": spec.scope_to.isoformat()},
        "row_interval": [spec.row_start, spec.row_end],
        "rows": child.rows,
        "delivery_key": spec.delivery_key,
        "receiver_mutation_key": spec.receiver_mutation_key,
        "decoded": {"bytes": child.decoded_bytes, "content_digest": child.decoded_digest,
                    "digest_kind": "restproof.decoded_content.v1"},
        "payload": {"bytes": child.payload_bytes, "digest": child.payload_digest},
        "wire": {"bytes": child.wire_bytes, "digest": child.wire_digest, "content_type": child.content_type,
                 "content_encoding": rendered.content_encoding},
        "framing": {"prefix": prefix.decode(), "suffix": suffix.decode(), "boundary": child.boundary},
        "request": {
            "method": rendered.method, "path_and_query": rendered.path_and_query,
            "headers": [list(pair) for pair in rendered.headers],
            "scalar_parts": [list(pair) for pair in rendered.scalar_parts],
            "payload_part_name": rendered.payload_part_name, "filename": rendered.filename,
            "part_content_type": rendered.part_content_type,
        },
        "codec": {"sealer_version": "restproof.sealer.v1", "encoding": encoding.canonical(),
                  "compression": topology.sealer_identity["compression"]},
        # Both bundled profiles certify a mock-receiver.rows.v2 summary query.
        "expected_summary": {"scheme": "mock-receiver.rows.v2", "rows": child.rows,
                             "content_digest": child.expected_summary_digest},
    }


@pytest.mark.parametrize("workload, body, limits", [
    ("measurements-async", None, {"max_wire_bytes": 700, "planning_wire_bytes": 650}),
    ("measurements-sync", {"type": "csv", "compression": "gzip"}, None),
])
def test_the_manifest_records_every_fact_of_each_sealed_child(
    tmp_path: Path, workload: str, body: dict[str, Any] | None, limits: dict[str, Any] | None
) -> None:
    store = LocalArtifactStore(tmp_path)
    topology = seal(variant(bundled_plan(workload), body=body, limits=limits), store)
    assert any(child.spec.row_start > 0 for child in topology.children) or len(topology.children) == 1
    for child in topology.children:
        manifest = read_document(store, child.manifest_ref, PAYLOAD_SCHEMA_ID)
        assert manifest == _expected_manifest(topology, child, store)
    sync_child = topology.children[0]
    if not sync_child.spec.rendered.multipart:
        assert sync_child.wire_digest == sync_child.payload_digest and sync_child.boundary is None
        assert sync_child.spec.rendered.headers, "the sync profile renders its Idempotency-Key header"


# ----- the multipart boundary -------------------------------------------------------------------------
def _frozen(tmp_path: Path, records: list[dict[str, object]]) -> tuple[SealedTopology, LocalArtifactStore]:
    store = LocalArtifactStore(tmp_path)
    return seal(variant(bundled_plan(), body=CSV_PLAIN), store, records), store


def _reseal(topology: SealedTopology, store: LocalArtifactStore, *, extra_part: str | None = None) -> SealedChild:
    """Seal the topology's first child again under ``KEY`` (and an extra literal scalar part)."""
    spec = topology.children[0].spec
    rendered = spec.rendered
    if extra_part is not None:
        rendered = replace(rendered, scalar_parts=(*rendered.scalar_parts, ("note", extra_part)))
    encoder = RowEncoder(topology.plan.mapping, payload_encoding(topology.plan.operation))
    sealer = StreamingSealer(store, topology.frozen, encoder)
    return sealer.seal(replace(spec, receiver_mutation_key=KEY, rendered=rendered))


def _with_labels(*labels: str) -> list[dict[str, object]]:
    return [dict(GOLDEN_RECORDS[0], label=f"x{label}y") for label in labels] + GOLDEN_RECORDS[1:]


def _candidate(attempt: int) -> str:
    return multipart.boundary_candidate(KEY, attempt)


def test_a_boundary_found_in_a_scalar_part_is_never_chosen(tmp_path: Path) -> None:
    topology, store = _frozen(tmp_path, GOLDEN_RECORDS)
    assert _reseal(topology, store).boundary == _candidate(0)
    assert _reseal(topology, store, extra_part=f"a{_candidate(0)}b").boundary == _candidate(1)


def test_boundaries_found_in_the_payload_are_skipped_past_the_scanned_ones(tmp_path: Path) -> None:
    topology, store = _frozen(tmp_path, _with_labels(_candidate(0), _candidate(1), _candidate(2)))
    child = _reseal(topology, store)
    assert child.boundary == _candidate(3)
    body = wire_bytes(store, child.manifest_ref)
    assert body.count(b"--" + child.boundary.encode()) == 4  # 3 parts + the close delimiter


def test_a_later_candidate_in_the_parts_is_skipped_too(tmp_path: Path) -> None:
    topology, store = _frozen(tmp_path, _with_labels(_candidate(0), _candidate(1)))
    assert _reseal(topology, store).boundary == _candidate(2)
    assert _reseal(topology, store, extra_part=_candidate(2)).boundary == _candidate(3)


def test_no_free_boundary_candidate_is_refused(tmp_path: Path) -> None:
    labels = [_candidate(n) for n in range(multipart.MAX_BOUNDARY_ATTEMPTS)]
    topology, store = _frozen(tmp_path, _with_labels(*labels))
    with pytest.raises(SourceError) as refused:
        _reseal(topology, store)
    assert refused.value.code == "payload.boundary_exhausted"


# ----- JSON arrays from stored rows -------------------------------------------------------------------
def test_an_empty_scope_seals_as_an_empty_json_array(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    topology = seal(bundled_plan("measurements-sync"), store, [])
    for child in topology.children:
        assert child.rows == 0
        assert b"".join(store.open(child.payload_digest).chunks()) == b"[]"
        assert child.decoded_bytes == 2


def test_a_stored_json_row_without_its_newline_is_refused(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    plan = bundled_plan("measurements-sync")
    encoder = RowEncoder(plan.mapping, payload_encoding(plan.operation))
    assert encoder.rows_are_comma_joined
    stored = b'{"business_date":"2026-03-01"}'  # no trailing newline
    rows = store.put([stored])
    day = date(2026, 3, 1)
    slice_ = DaySlice(day, 1, len(stored), 0, 0, "sha256:" + hashlib.sha256(stored).hexdigest())
    parent = FrozenParent("sha256:" + "0" * 64, rows.digest, 1, len(stored), day, day + timedelta(days=1),
                          (slice_,), len(encoder.prefix()), "test")
    template = seal(plan, LocalArtifactStore(tmp_path / "template")).children[0].spec
    spec = ChildSpec(0, day, day + timedelta(days=1), 0, 1, template.delivery_key, KEY, template.rendered)
    with pytest.raises(ArtifactCorrupt):
        StreamingSealer(store, parent, encoder).seal(spec)
