"""What a recorded request targets, read from its own bytes against the receiver's contract: the sync
range in the query, the async upload's multipart range parts, the days its rows carry for appends
(also gzipped), the fence it carries (the header's value, the upload's file-name key), and what a
cut request still shows (truncated multipart, a partial head). Plus the contract read from the
behaviour files themselves, and a property: no bytes a sink can send make the reader raise."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from certification.documents import DocumentError
from certification.http_framing import RawRequest, RequestFramer
from certification.receiver_contract import (
    MUTATION_ENDPOINTS,
    Endpoint,
    Fence,
    filename_key,
    read_contract,
)
from certification.scenarios import BUNDLED
from certification.wire_reader import multipart_parts, read_request, row_days

RECEIVERS = BUNDLED.parent / "receivers"
SYNC = read_contract(RECEIVERS / "json-batches.yaml")
JOBS = read_contract(RECEIVERS / "dataset-jobs.yaml")
BATCHES = "/mock/v1/resources/measurements/batches"
EVENTS = "/mock/v1/resources/events/batches"


def raw(method: str, target: str, body: bytes = b"", headers: tuple[tuple[str, str], ...] = (), *,
        cut: int | None = None) -> RawRequest:
    """The request as framed from its bytes, optionally cut after ``cut`` bytes."""
    head = f"{method} {target} HTTP/1.1\r\nHost: r\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    if body:
        head += f"Content-Length: {len(body)}\r\n"
    data = head.encode("latin-1") + b"\r\n" + body
    framer = RequestFramer()
    framer.feed(data if cut is None else data[:cut])
    return framer.requests[0]


def multipart(parts: list[tuple[str, str | None, bytes]], boundary: str = "b0undary") -> tuple[bytes, str]:
    chunks = []
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        chunks.append(f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + content + b"\r\n")
    return b"".join(chunks) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def upload(filename: str = "k1.csv", content: bytes = b"business_date,x\n2026-03-02,1\n", *,
           range_: tuple[str, str] | None = ("2026-03-01", "2026-03-03"), file_first: bool = False,
           boundary: str = "b0undary", target: str = "/mock/v1/dataset-jobs", cut: int | None = None) -> RawRequest:
    scalars = [] if range_ is None else [("range_start", None, range_[0].encode()),
                                         ("range_end", None, range_[1].encode())]
    file_part = [("file", filename, content)]
    body, content_type = multipart(file_part + scalars if file_first else scalars + file_part, boundary)
    return raw("POST", target, body, (("Content-Type", content_type),), cut=cut)


# --- the contract -------------------------------------------------------------------------------------------


def test_the_sync_contract_of_json_batches() -> None:
    assert SYNC.name == "json-batches"
    assert SYNC.sync_fence == Fence("idempotency_key", "idempotency-key", 86400.0)
    assert SYNC.sync_fence.deduplicates and SYNC.async_fence is None and SYNC.async_resource is None
    assert SYNC.resources["measurements"].mutation == "partition_replace"
    assert SYNC.resources["events"].date_field == "event_date"


def test_the_async_contract_of_dataset_jobs() -> None:
    assert JOBS.async_fence == Fence("filename_key", None, None) and JOBS.async_fence.deduplicates
    assert JOBS.async_resource == "measurements"
    assert JOBS.sync_fence is not None and JOBS.sync_fence.header == "idempotency-key"


@pytest.mark.parametrize(("kind", "deduplicates"), [
    ("idempotency_key", True), ("fingerprint_ledger", True), ("filename_key", True), ("bare_409", False),
    ("none", False),
])
def test_which_fences_certifiably_deduplicate(kind: str, deduplicates: bool) -> None:
    assert Fence(kind, None, None).deduplicates is deduplicates


def test_every_bundled_personality_reads() -> None:
    contracts = {path.stem: read_contract(path) for path in RECEIVERS.glob("*.yaml")}
    assert contracts["bare-409"].sync_fence == Fence("bare_409", None, None)
    assert not contracts["bare-409"].sync_fence.deduplicates
    assert contracts["fingerprint-ledger"].sync_fence == Fence("fingerprint_ledger", "idempotency-key", None)


def _behaviour(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "b.yaml"
    path.write_text(text)
    return path


def test_contract_defaults_and_switches(tmp_path: Path) -> None:
    resources = "resources: {m: {date_field: d}}\n"
    bare = read_contract(_behaviour(tmp_path, resources))
    assert bare.name == "b" and bare.resources["m"].mutation == "partition_replace"
    assert bare.sync_fence == Fence("none", None, None) and bare.async_fence is None
    custom = read_contract(_behaviour(tmp_path, resources + "sync: {fence: {type: idempotency_key, header: X-Key,"
                                                           " retention_seconds: 60}}\n"))
    assert custom.sync_fence == Fence("idempotency_key", "x-key", 60.0)
    off = read_contract(_behaviour(tmp_path, resources + "sync: {enabled: false}\nasync_jobs: {enabled: false,"
                                                        " resource: m, fence: {type: filename_key}}\n"))
    assert off.sync_fence is None and off.async_fence is None and off.async_resource is None
    odd = read_contract(_behaviour(tmp_path, resources + "sync: {fence: {type: idempotency_key,"
                                                        " retention_seconds: true}}\n"))
    assert odd.sync_fence == Fence("idempotency_key", "idempotency-key", None)


@pytest.mark.parametrize(("text", "problem"), [
    ("[1]\n", "not a receiver behaviour"),
    ("name: x\n", "not a receiver behaviour"),
    ("resources: {m: {mutation: partition_replace}}\n", "resource 'm' has no date_field"),
    ("resources: {m: {date_field: d}}\nresources: {}\n", "duplicate key"),
])
def test_behaviours_it_refuses(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(DocumentError, match=problem):
        read_contract(_behaviour(tmp_path, text))


@pytest.mark.parametrize(("method", "path", "endpoint"), [
    ("POST", BATCHES, Endpoint.SYNC_SUBMIT), ("PUT", BATCHES, Endpoint.SYNC_SUBMIT),
    ("post", BATCHES, Endpoint.SYNC_SUBMIT), ("GET", BATCHES, Endpoint.OTHER),
    ("POST", BATCHES + "/", Endpoint.OTHER), ("POST", "/mock/v1/resources/a b/batches", Endpoint.OTHER),
    ("POST", "/mock/v1/dataset-jobs", Endpoint.ASYNC_SUBMIT), ("PUT", "/mock/v1/dataset-jobs", Endpoint.OTHER),
    ("GET", "/mock/v1/dataset-jobs/job-1", Endpoint.JOB_POLL),
    ("HEAD", "/mock/v1/dataset-jobs/job-1", Endpoint.JOB_POLL),
    ("POST", "/mock/v1/dataset-jobs/job-1", Endpoint.OTHER), ("GET", "/mock/v1/dataset-jobs/a/b", Endpoint.OTHER),
    ("GET", "/mock/v1/resources/measurements/summary", Endpoint.SUMMARY),
    ("DELETE", "/mock/v1/resources/measurements/summary", Endpoint.OTHER), ("", "", Endpoint.OTHER),
])
def test_endpoints(method: str, path: str, endpoint: Endpoint) -> None:
    assert SYNC.endpoint(method, path) is endpoint


def test_only_submits_are_mutations() -> None:
    assert frozenset({Endpoint.SYNC_SUBMIT, Endpoint.ASYNC_SUBMIT}) == MUTATION_ENDPOINTS


def test_resources_and_fences_per_endpoint() -> None:
    assert JOBS.resource_of(Endpoint.SYNC_SUBMIT, EVENTS) == "events"
    assert JOBS.resource_of(Endpoint.SYNC_SUBMIT, "/elsewhere") is None
    assert JOBS.resource_of(Endpoint.ASYNC_SUBMIT, "/mock/v1/dataset-jobs") == "measurements"
    assert JOBS.resource_of(Endpoint.JOB_POLL, "/mock/v1/dataset-jobs/j") is None
    assert JOBS.fence_for(Endpoint.SYNC_SUBMIT) is JOBS.sync_fence
    assert JOBS.fence_for(Endpoint.ASYNC_SUBMIT) is JOBS.async_fence
    assert JOBS.fence_for(Endpoint.SUMMARY) is None and JOBS.fence_for(Endpoint.OTHER) is None


@pytest.mark.parametrize(("name", "key"), [
    ("k1.csv", "k1"), ("k1.csv.gz", "k1"), ("k1.json", "k1"), ("k1.ndjson.gz", "k1"), ("k1.jsonl", "k1"),
    ("k1.gz", "k1"), ("k1", "k1"), ("k1.txt", "k1.txt"), ("k1.csv.csv", "k1.csv"), ("k1.gz.csv", "k1.gz"),
])
def test_the_file_name_key_is_the_receivers(name: str, key: str) -> None:
    assert filename_key(name) == key


# --- sync requests --------------------------------------------------------------------------------------


def test_a_sync_batch_targets_its_query_range_and_carries_its_header_fence() -> None:
    request = raw("POST", f"{BATCHES}?range_start=2026-03-01&range_end=2026-03-03", b"[]",
                  (("Idempotency-Key", "key-1"),))
    facts = read_request(request, SYNC)
    assert facts.endpoint is Endpoint.SYNC_SUBMIT and facts.mutation and facts.method == "POST"
    assert facts.path == BATCHES and facts.resource == "measurements"
    assert facts.targets == frozenset({"2026-03-01", "2026-03-02"}) and facts.target_source == "range"
    assert facts.fence is not None and facts.fence.startswith("sha256:") and "key-1" not in facts.fence


def test_fences_compare_by_value() -> None:
    def fence(*keys: str) -> str | None:
        headers = tuple(("Idempotency-Key", key) for key in keys)
        return read_request(raw("POST", f"{BATCHES}?range_start=2026-03-01&range_end=2026-03-02", b"[]", headers),
                            SYNC).fence

    assert fence("a") == fence("a") != fence("b")
    assert fence() is None
    assert fence("a", "b") not in (fence("a"), fence("b"))  # two values: neither one alone


def test_a_header_the_receiver_does_not_fence_on_is_no_fence() -> None:
    request = raw("POST", f"{BATCHES}?range_start=2026-03-01&range_end=2026-03-02", b"[]", (("X-Key", "a"),))
    assert read_request(request, SYNC).fence is None
    assert read_request(upload(), JOBS).fence is not None  # an upload's fence is its file name ...
    assert read_request(raw("POST", "/mock/v1/dataset-jobs", b"x", (("Idempotency-Key", "a"),)), JOBS).fence is None


@pytest.mark.parametrize(("query", "targets", "source"), [
    ("range_start=2026-03-01&range_end=2026-03-01", frozenset(), "range"),  # an empty range changes nothing
    ("range_start=2026-03-02&range_end=2026-03-01", frozenset(), "range"),
    ("range_start=2026-02-30&range_end=2026-03-01", frozenset(), "range"),  # the receiver refuses it
    ("range_start=2026-03-01", None, "unknown"),
    ("range_end=2026-03-01", None, "unknown"),
    ("", None, "unknown"),
])
def test_ranges_the_receiver_would_refuse_or_cannot_see(query: str, targets: frozenset[str] | None,
                                                        source: str) -> None:
    facts = read_request(raw("POST", f"{BATCHES}?{query}", b"{"), SYNC)
    assert (facts.targets, facts.target_source) == (targets, source)


def test_an_append_targets_the_days_its_rows_carry() -> None:
    rows = [{"event_date": "2026-03-01", "v": 1}, {"event_date": "2026-03-04T10:00:00Z"}, {"v": 3}]
    for body, content_type in ((json.dumps(rows).encode(), "application/json"),
                               ("\n".join(json.dumps(r) for r in rows).encode(), "application/x-ndjson"),
                               (b"event_date,v\n2026-03-01,1\n2026-03-04,2\n", "text/csv")):
        facts = read_request(raw("POST", EVENTS, body, (("Content-Type", content_type),)), SYNC)
        assert (facts.targets, facts.target_source) == (frozenset({"2026-03-01", "2026-03-04"}), "rows")


def test_gzipped_rows_are_read_by_header_or_by_magic() -> None:
    body = gzip.compress(b"event_date,v\n2026-03-02,1\n")
    for headers in ((("Content-Encoding", "gzip"),), (("Content-Type", "application/gzip"),)):
        assert read_request(raw("POST", EVENTS, body, headers), SYNC).targets == frozenset({"2026-03-02"})
    broken = read_request(raw("POST", EVENTS, body[:-8] + b"xxxxxxxx", (("Content-Encoding", "gzip"),)), SYNC)
    assert broken.targets is None and broken.target_source == "unknown"


@pytest.mark.parametrize("body", [b"", b"[1, 2]", b'{"rows": []}', b"\xff\xfe", b"[", b"event_date\nshort\n",
                                  b'[{"event_date": 20260301}]'])
def test_rows_that_name_no_day_leave_the_targets_unknown(body: bytes) -> None:
    facts = read_request(raw("POST", EVENTS, body), SYNC)
    assert facts.targets is None and facts.target_source == "unknown"


def test_an_incomplete_body_is_not_read_for_rows() -> None:
    body = b"event_date,v\n2026-03-01,1\n"
    whole = raw("POST", EVENTS, body)
    assert read_request(whole, SYNC).targets == frozenset({"2026-03-01"})
    cut = raw("POST", EVENTS, body, cut=len(whole.head) + 4 + 10)
    assert not cut.body_complete and read_request(cut, SYNC).targets is None


def test_a_range_is_read_even_from_a_head_alone() -> None:
    request = raw("POST", f"{BATCHES}?range_start=2026-03-01&range_end=2026-03-02", b"[]",
                  cut=len(f"POST {BATCHES}?range_start=2026-03-01&range_end=2026-03-02 HTTP/1.1\r\n"))
    assert not request.head_complete
    facts = read_request(request, SYNC)
    assert facts.endpoint is Endpoint.SYNC_SUBMIT and facts.targets == frozenset({"2026-03-01"})
    assert facts.fence is None  # the headers never left the sink


def test_a_head_cut_inside_its_request_line_reaches_no_endpoint() -> None:
    request = raw("POST", BATCHES, b"[]", cut=12)
    facts = read_request(request, SYNC)
    assert facts.endpoint is Endpoint.OTHER and not facts.mutation and facts.method == ""


def test_rows_of_an_unknown_resource_are_not_read() -> None:
    facts = read_request(raw("POST", "/mock/v1/resources/nope/batches", b"d\n2026-03-01\n"), SYNC)
    assert facts.resource == "nope" and facts.targets is None


# --- async uploads --------------------------------------------------------------------------------------


def test_an_upload_targets_its_range_parts_and_carries_its_file_name_key() -> None:
    facts = read_request(upload(), JOBS)
    assert facts.endpoint is Endpoint.ASYNC_SUBMIT and facts.resource == "measurements"
    assert facts.targets == frozenset({"2026-03-01", "2026-03-02"}) and facts.target_source == "range"
    assert facts.fence == read_request(upload("k1.csv.gz", gzip.compress(b"business_date\n")), JOBS).fence
    assert facts.fence != read_request(upload("k2.csv"), JOBS).fence


def test_a_renamed_file_or_another_boundary_is_the_same_days_with_another_fence() -> None:
    first, renamed = read_request(upload("k1.csv"), JOBS), read_request(upload("upload-2.csv"), JOBS)
    assert first.targets == renamed.targets and first.fence != renamed.fence
    other_boundary = read_request(upload("k1.csv", boundary="zzz-random-42"), JOBS)
    assert other_boundary.targets == first.targets and other_boundary.fence == first.fence


def test_an_upload_without_range_parts_targets_its_rows_days() -> None:
    facts = read_request(upload(range_=None), JOBS)
    assert facts.targets == frozenset({"2026-03-02"}) and facts.target_source == "rows"
    gz = read_request(upload("k.csv.gz", gzip.compress(b"business_date\n2026-03-04\n"), range_=None), JOBS)
    assert gz.targets == frozenset({"2026-03-04"})


def test_the_async_range_is_read_from_its_parts_only() -> None:
    # The receiver reads an upload's range from its parts; a query range is not its contract.
    facts = read_request(upload(target="/mock/v1/dataset-jobs?range_start=2026-04-01&range_end=2026-04-02"), JOBS)
    assert facts.targets == frozenset({"2026-03-01", "2026-03-02"})


def test_a_truncated_upload_shows_the_parts_that_left_the_sink() -> None:
    whole = upload(file_first=False)
    body = bytes(whole.body)
    cut_in_file = len(whole.head) + 4 + body.index(b"2026-03-02,1")
    facts = read_request(upload(cut=cut_in_file), JOBS)
    assert facts.targets == frozenset({"2026-03-01", "2026-03-02"}) and facts.fence is not None
    late = upload(file_first=True)
    cut_before_range = len(late.head) + 4 + bytes(late.body).index(b"range_start") - 40
    facts = read_request(upload(file_first=True, cut=cut_before_range), JOBS)
    assert facts.targets is None and facts.target_source == "unknown"  # the file is partial: no rows read


def test_multipart_parts_tolerate_truncation() -> None:
    body, _ = multipart([("a", None, b"1"), ("f", "x.csv", b"rows")])
    assert multipart_parts(body, "b0undary") == [("a", None, b"1"), ("f", "x.csv", b"rows")]
    assert multipart_parts(body[:body.index(b"rows") + 2], "b0undary") == [("a", None, b"1"), ("f", "x.csv", b"ro")]
    assert multipart_parts(b"--b0undary\r\nContent-Disposition: form-data", "b0undary") == []
    assert multipart_parts(b"no delimiter at all", "b0undary") == []


def test_rfc2231_parameters_are_no_file_name() -> None:
    # The receiver reads only a plain ``filename=``: ``filename*=`` makes no file part (it refuses the upload).
    body = (b"--B\r\nContent-Disposition: form-data; name=\"range_start\"\r\n\r\n2026-03-01\r\n"
            b"--B\r\nContent-Disposition: form-data; name=\"range_end\"\r\n\r\n2026-03-02\r\n"
            b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename*=UTF-8''k1.csv\r\n\r\nx\r\n--B--\r\n")
    facts = read_request(raw("POST", "/mock/v1/dataset-jobs", body,
                             (("Content-Type", "multipart/form-data; boundary=B"),)), JOBS)
    assert facts.fence is None and facts.targets == frozenset({"2026-03-01"})


def test_a_multipart_without_a_boundary_is_read_as_far_as_possible() -> None:
    facts = read_request(raw("POST", "/mock/v1/dataset-jobs", b"x", (("Content-Type", "multipart/form-data"),)),
                         JOBS)
    assert facts.targets is None and facts.fence is None


def test_row_days() -> None:
    assert row_days(b'[{"d": "2026-03-01"}, {"d": "2026-03-02T00:00:00Z"}, 5]', "d") == frozenset(
        {"2026-03-01", "2026-03-02"})
    assert row_days(b'{"d": "2026-03-01"}\n\n{"d": "2026-03-03"}\n', "d") == frozenset({"2026-03-01", "2026-03-03"})
    assert row_days(b"d,x\n2026-03-05,1\n", "d") == frozenset({"2026-03-05"})
    assert row_days("\ufeffd\n2026-03-05\n".encode(), "d") == frozenset({"2026-03-05"})
    assert row_days(b'{"d": "2026-03-01"}\n[1]\n', "d") is None
    assert row_days(b"\xff", "d") is None
    assert row_days(b'[{"d": "short"}]', "d") == frozenset()


# --- no bytes make it raise -----------------------------------------------------------------------------------


PIECES = st.sampled_from([
    b"POST ", b"GET ", b"/mock/v1/dataset-jobs", BATCHES.encode(), b"?range_start=2026-03-01&range_end=2026-03-0",
    b"//[x", b" HTTP/1.1\r\n", b"Content-Type: multipart/form-data; boundary=B\r\n",
    b"Content-Type: multipart/form-data; boundary*=UTF-8''B\r\n", b"Content-Encoding: gzip\r\n",
    b"Idempotency-Key: k\r\n", b"Content-Length: 40\r\n", b"Transfer-Encoding: chunked\r\n", b"\r\n",
    b"--B\r\nContent-Disposition: form-data; name=\"range_start\"\r\n\r\n2026-03-01\r\n",
    b"--B\r\nContent-Disposition: form-data; name*=UTF-8''x; filename*=UTF-8''k.csv\r\n\r\n",
    b"--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"k.csv.gz\"\r\n\r\n\x1f\x8b\x08",
    b"business_date\n2026-03-01\n", b"[{\"business_date\": \"2026-03-01\"}]", b"--B--\r\n", b"\x00\xff",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=14), st.sampled_from([SYNC, JOBS]))
def test_no_request_bytes_make_the_reader_raise(pieces: list[bytes], contract) -> None:
    framer = RequestFramer()
    framer.feed(b"".join(pieces))
    for request in framer.requests:
        facts = read_request(request, contract)
        assert facts.targets is None or all(len(day) == 10 for day in facts.targets)
