"""Streaming sealer: whole-body wire measurement, multipart boundary, refinement, corruption, memory."""

from __future__ import annotations

import email.parser
import gzip
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sink.artifacts import ArtifactCorrupt, LocalArtifactStore, read_document
from sink.contracts.errors import DeliveryError, ErrorCode
from sink.payload import multipart
from sink.payload.body import PAYLOAD_SCHEMA_ID
from tests.payload.pl_helpers import GOLDEN_RECORDS, REPO, bundled_plan, seal, variant, wire_bytes


def test_wire_bytes_and_digest_cover_the_complete_multipart_body(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    child = seal(bundled_plan(), store).children[0]
    body = wire_bytes(store, child.manifest_ref)
    assert child.wire_bytes == len(body) > child.payload_bytes
    assert child.wire_digest == "sha256:" + hashlib.sha256(body).hexdigest()
    message = email.parser.BytesParser().parsebytes(
        b"Content-Type: " + child.content_type.encode() + b"\r\n\r\n" + body)
    parts = message.get_payload()
    assert [p.get_param("name", header="content-disposition") for p in parts] == ["range_start", "range_end", "file"]
    assert parts[2].get_filename() == f"{child.spec.receiver_mutation_key}.csv.gz"
    file_bytes = parts[2].get_payload(decode=True)
    assert hashlib.sha256(file_bytes).hexdigest() == child.payload_digest.removeprefix("sha256:")
    assert len(gzip.decompress(file_bytes)) == child.decoded_bytes
    assert child.boundary is not None and child.boundary.encode() not in file_bytes


def test_payload_manifest_pins_codec_identity_and_lineage(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path)
    topology = seal(bundled_plan(), store)
    manifest = read_document(store, topology.children[0].manifest_ref, PAYLOAD_SCHEMA_ID)
    compression = manifest["codec"]["compression"]
    assert (compression["implementation"], compression["level"]) == ("zlib", 6)
    assert manifest["parent"] == topology.frozen.digest
    assert set(manifest["refs"]) == {topology.children[0].payload_digest, topology.frozen.digest}


def test_boundary_colliding_with_the_payload_is_replaced(tmp_path: Path) -> None:
    plan = variant(bundled_plan(), body={"payload_part": {"compression": "none", "content_type": "text/csv"}})
    store = LocalArtifactStore(tmp_path / "probe")
    probe = seal(plan, store).children[0]
    first = multipart.boundary_candidate(probe.spec.receiver_mutation_key, 0)
    assert probe.boundary == first
    records = [dict(GOLDEN_RECORDS[0], label=f"x{first}y")]
    child = seal(plan, LocalArtifactStore(tmp_path / "real"), records).children[0]
    assert child.boundary == multipart.boundary_candidate(child.spec.receiver_mutation_key, 1)
    body = wire_bytes(LocalArtifactStore(tmp_path / "real"), child.manifest_ref)
    assert body.count(b"--" + child.boundary.encode()) == 4  # 3 parts + the close delimiter


def test_children_are_split_until_the_wire_limit_holds(tmp_path: Path) -> None:
    plan = bundled_plan()
    wide = seal(plan, LocalArtifactStore(tmp_path / "a"))
    assert len(wide.children) == 1
    small = variant(plan, limits={"max_wire_bytes": 700, "planning_wire_bytes": 650})
    split = seal(small, LocalArtifactStore(tmp_path / "b"))
    assert len(split.children) > 1
    assert all(child.wire_bytes <= 700 for child in split.children)
    assert sum(child.rows for child in split.children) == len(GOLDEN_RECORDS)


def test_a_single_day_over_the_hard_wire_limit_is_never_divided(tmp_path: Path) -> None:
    plan = variant(bundled_plan(), limits={"max_wire_bytes": 300, "planning_wire_bytes": 300})
    with pytest.raises(DeliveryError) as caught:
        seal(plan, LocalArtifactStore(tmp_path))
    assert caught.value.code is ErrorCode.SCOPE_EXCEEDS_LIMIT


def test_a_corrupt_parent_day_is_refused_while_sealing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalArtifactStore(tmp_path)
    original = store.read_range

    def flipped(digest: str, start: int, end: int):  # type: ignore[no-untyped-def]
        for chunk in original(digest, start, end):
            yield chunk[:-1] + bytes([chunk[-1] ^ 1])

    monkeypatch.setattr(store, "read_range", flipped)
    with pytest.raises(ArtifactCorrupt):
        seal(bundled_plan(), store)


STREAMING_CHILD = r"""
import resource, sys, hashlib
from datetime import date
from pathlib import Path
from sink.artifacts import LocalArtifactStore, put_document
from sink.payload.body import WireBody
from sink.payload.encoding import RowEncoder, payload_encoding
from sink.payload.rendering import RequestSymbols, render_request
from sink.payload.sealer import ChildSpec, StreamingSealer
from sink.source.freeze import PARENT_SCHEMA_ID, DaySlice, FrozenParent
from tests.payload.pl_helpers import bundled_plan

root, size = Path(sys.argv[1]), int(sys.argv[2])
plan = bundled_plan()
encoder = RowEncoder(plan.mapping, payload_encoding(plan.operation))
row = encoder.encode(["2026-03-01", "00017", "12.500", "x" * 900, True, "2026-03-01T05:00:00.000000Z", 1])
count = size // len(row)
store = LocalArtifactStore(root)
def rows():
    block = row * 1000
    for _ in range(count // 1000):
        yield block
rows_ref = store.put(rows())
hasher = hashlib.sha256()
for chunk in store.open(rows_ref.digest).chunks():
    hasher.update(chunk)
day = DaySlice(date(2026, 3, 1), (count // 1000) * 1000, rows_ref.length, 0, 0, "sha256:" + hasher.hexdigest())
parent = FrozenParent("sha256:" + "0" * 64, rows_ref.digest, day.rows, rows_ref.length, date(2026, 3, 1),
                      date(2026, 3, 2), (day,), len(encoder.prefix()), "test")
with open("/proc/self/status") as status:
    vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
limit = vm + 160 * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
rendered = render_request(plan, RequestSymbols("measurements", "sha256:" + "1" * 64, "sha256:" + "2" * 64,
                                               date(2026, 3, 1), date(2026, 3, 2)))
spec = ChildSpec(0, date(2026, 3, 1), date(2026, 3, 2), 0, day.rows, "sha256:" + "1" * 64, "sha256:" + "2" * 64,
                 rendered)
sealed = StreamingSealer(store, parent, encoder).seal(spec)
assert sealed.decoded_bytes > limit - vm, "the payload must be larger than the memory headroom"
streamed = sum(len(chunk) for chunk in WireBody.load(store, sealed.manifest_ref).chunks())
assert streamed == sealed.wire_bytes
print("ok", sealed.decoded_bytes, limit - vm)
"""


@pytest.mark.timeout(300)
def test_sealing_streams_a_payload_far_larger_than_its_memory_limit(tmp_path: Path) -> None:
    size = 400 * 1024 * 1024
    done = subprocess.run([sys.executable, "-c", STREAMING_CHILD, str(tmp_path), str(size)], capture_output=True,
                          text=True, timeout=280, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert done.stdout.startswith("ok"), done.stderr[-3000:]
