"""The shipped doubles keep their ports' contracts: the in-memory store answers as the local
directory store does (one suite over both), the scripted transport answers in script order and
records what it was sent."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from sink.artifacts import (
    ArtifactConflict,
    ArtifactCorrupt,
    ArtifactMissing,
    ImmutableArtifactPort,
    LocalArtifactStore,
    collect,
    put_document,
    read_document,
)
from sink.contracts.transport import BodySource, RestTransportPort
from sink.testing import (
    TEST_TIMEOUTS,
    InMemoryArtifactStore,
    PreparedRequest,
    ScriptedTransport,
    ScriptExhausted,
    SendCertainty,
    not_started,
    reached_peer,
    responded,
)

StoreFactory = Callable[[Path], ImmutableArtifactPort]
STORES: dict[str, StoreFactory] = {
    "local": lambda root: LocalArtifactStore(root, chunk_bytes=4),
    "memory": lambda _root: InMemoryArtifactStore(chunk_bytes=4),
}


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ImmutableArtifactPort:
    return STORES[request.param](tmp_path)


def test_both_stores_satisfy_the_port(store: ImmutableArtifactPort) -> None:
    assert isinstance(store, ImmutableArtifactPort)
    assert isinstance(store.open(store.put_bytes(b"x").digest), BodySource)


def test_put_is_content_addressed_and_create_if_absent(store: ImmutableArtifactPort) -> None:
    first = store.put([b"hello ", b"world"])
    again = store.put_bytes(b"hello world")
    assert first.digest == again.digest == _digest(b"hello world")
    assert (first.created, again.created) == (True, False)
    assert first.length == 11
    reader = store.open(first.digest)
    assert (reader.length, reader.digest) == (11, first.digest)
    assert list(reader.chunks()) == [b"hell", b"o wo", b"rld"]  # bounded chunks
    assert list(store.list_refs()) == [first.digest]
    assert store.exists(first.digest) and not store.exists(_digest(b"other"))


def test_empty_bytes_round_trip(store: ImmutableArtifactPort) -> None:
    ref = store.put([])
    assert ref.digest == _digest(b"")
    assert b"".join(store.open(ref.digest).chunks()) == b""


def test_expected_digest_mismatch_publishes_nothing(store: ImmutableArtifactPort) -> None:
    with pytest.raises(ArtifactConflict):
        store.put([b"abc"], expected_digest=_digest(b"abd"))
    assert list(store.list_refs()) == []
    assert store.put([b"abc"], expected_digest=_digest(b"abc")).created


def test_missing_and_malformed_names(store: ImmutableArtifactPort) -> None:
    with pytest.raises(ArtifactMissing):
        store.open(_digest(b"never stored"))
    with pytest.raises(ValueError, match="sha256"):
        store.open("sha256:XYZ")


def test_ranges_are_bounded(store: ImmutableArtifactPort) -> None:
    ref = store.put_bytes(b"0123456789")
    assert b"".join(store.read_range(ref.digest, 2, 9)) == b"2345678"
    assert all(len(chunk) <= 4 for chunk in store.read_range(ref.digest, 0, 10))
    assert b"".join(store.read_range(ref.digest, 5, 5)) == b""
    for start, end in ((-1, 3), (4, 3), (0, 11)):
        with pytest.raises(ArtifactCorrupt):
            b"".join(store.read_range(ref.digest, start, end))


def test_roots_are_create_if_absent(store: ImmutableArtifactPort) -> None:
    one, two = store.put_bytes(b"one").digest, store.put_bytes(b"two").digest
    store.put_root("parent-a", one)
    store.put_root("parent-a", one)  # the same target again: no-op
    with pytest.raises(ArtifactConflict):
        store.put_root("parent-a", two)
    with pytest.raises(ValueError, match="root name"):
        store.put_root("../escape", one)
    assert list(store.roots()) == [("parent-a", one)]


def test_documents_and_gc_work_over_either_store(store: ImmutableArtifactPort) -> None:
    leaf = store.put_bytes(b"payload")
    kept = put_document(store, {"schema_id": "t.v1", "refs": [leaf.digest]})
    orphan = store.put_bytes(b"orphan")
    store.put_root("keep", kept.digest)
    assert read_document(store, kept.digest, "t.v1")["refs"] == [leaf.digest]
    report = collect(store, grace_seconds=0.0)
    assert orphan.digest in report.unreferenced and kept.digest not in report.unreferenced


def test_a_corrupt_memory_artifact_never_reaches_its_end() -> None:
    store = InMemoryArtifactStore(chunk_bytes=4)
    ref = store.put_bytes(b"abcdefghij")
    store.corrupt(ref.digest, b"abcdefghiX")
    chunks = store.open(ref.digest).chunks()
    assert next(chunks) == b"abcd" and next(chunks) == b"efgh"
    with pytest.raises(ArtifactCorrupt):
        next(chunks)  # the last chunk is withheld
    with pytest.raises(ArtifactConflict):
        store.put_bytes(b"abcdefghij")  # never overwrites stored evidence


def test_memory_ages_come_from_its_clock() -> None:
    now = [1000.0]
    store = InMemoryArtifactStore(clock=lambda: now[0])
    ref = store.put_bytes(b"x")
    now[0] += 90
    assert store.age_seconds(ref.digest) == 90.0
    store.put_bytes(b"x")  # republishing does not make it younger
    assert store.age_seconds(ref.digest) == 90.0
    assert collect(store, grace_seconds=60).unreferenced == (ref.digest,)
    assert collect(store, grace_seconds=120).young == (ref.digest,)


def _post(path: str = "/v1/batches") -> PreparedRequest:
    return PreparedRequest(method="POST", path_and_query=path, semantic_headers=(("idempotency-key", "k-1"),),
                           content_type=None, body=None)


def _get(path: str = "/v1/jobs/1") -> PreparedRequest:
    return PreparedRequest(method="GET", path_and_query=path, semantic_headers=(), content_type=None, body=None)


def test_the_transport_answers_mutations_in_order_and_reads_with_one_answer() -> None:
    transport = ScriptedTransport([reached_peer(), responded(201, {"/id": "b-1"})],
                                  read=lambda request: responded(200, {"/path": request.path_and_query}))
    assert isinstance(transport, RestTransportPort)
    assert transport.send(_post(), timeouts=TEST_TIMEOUTS).evidence.certainty is SendCertainty.MAY_HAVE_REACHED_PEER
    read = transport.send(_get("/v1/jobs/7"), timeouts=TEST_TIMEOUTS).response
    assert read is not None and read.scalars == {"/path": "/v1/jobs/7"}
    answer = transport.send(_post(), timeouts=TEST_TIMEOUTS).response
    assert answer is not None and (answer.status, answer.scalars) == (201, {"/id": "b-1"})
    assert [s.request.method for s in transport.sent] == ["POST", "GET", "POST"]
    assert (len(transport.posts()), len(transport.gets()), transport.remaining) == (2, 1, 0)
    assert transport.mutations() == transport.posts() and transport.reads() == transport.gets()


def test_a_request_beyond_the_script_fails_the_test() -> None:
    transport = ScriptedTransport([responded(200)])
    transport.send(_post(), timeouts=TEST_TIMEOUTS)
    with pytest.raises(ScriptExhausted, match="more mutations sent than scripted"):
        transport.send(_post(), timeouts=TEST_TIMEOUTS)
    with pytest.raises(AssertionError, match="read-only GET"):
        transport.send(_get(), timeouts=TEST_TIMEOUTS)
    assert len(transport.sent) == 3  # recorded even when unanswered


def test_trace_steps_reach_the_observer_before_the_answer() -> None:
    seen: list[str] = []
    transport = ScriptedTransport([not_started()], trace=("connection.connect_tcp.started",))
    outcome = transport.send(_post(), timeouts=TEST_TIMEOUTS, observer=seen.append)
    assert seen == ["connection.connect_tcp.started"]
    assert outcome.evidence.certainty is SendCertainty.NOT_STARTED and outcome.response is None
    assert transport.sent[0].observer is not None and transport.sent[0].timeouts == TEST_TIMEOUTS
    transport.close()
    assert transport.closed


def test_outcome_builders_keep_the_transport_contract() -> None:
    assert not_started().evidence.request_bytes_to_kernel == 0
    assert reached_peer().response is None
    answer = responded(409, headers={"retry-after": "3"}).response
    assert answer is not None and answer.headers == {"retry-after": "3"}
