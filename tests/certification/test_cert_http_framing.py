"""The incremental HTTP/1.1 request framer: Content-Length and chunked bodies (extensions,
trailers), pipelined requests, heads and bodies cut anywhere, and every FramingError ending framing
for the connection with the rest kept as raw bytes."""

from __future__ import annotations

import pytest

from certification import http_framing
from certification.http_framing import MAX_HEAD_BYTES, FramingError, RawRequest, RequestFramer, parse_head

POST = b"POST /mock/v1/resources/measurements/batches HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
CHUNKED = (b"POST /j HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n")


def framed(*chunks: bytes) -> RequestFramer:
    framer = RequestFramer()
    for chunk in chunks:
        framer.feed(chunk)
    return framer


def one_by_one(data: bytes) -> RequestFramer:
    return framed(*(data[i:i + 1] for i in range(len(data))))


def test_a_content_length_request() -> None:
    framer = RequestFramer()
    heads = framer.feed(POST)
    (request,) = framer.requests
    assert heads == [request]
    assert (request.method, request.target) == ("POST", "/mock/v1/resources/measurements/batches")
    assert request.headers == [("host", b"x"), ("content-length", b"5")]
    assert request.head == POST.split(b"\r\n\r\n")[0]
    assert request.head_complete and request.body_complete and bytes(request.body) == b"hello"
    assert request.start == 0 and not request.unframed and not framer.failed


@pytest.mark.parametrize("feed", [framed, one_by_one])
def test_chunked_with_extensions_and_trailers(feed) -> None:
    framer = feed(CHUNKED)
    (request,) = framer.requests
    assert bytes(request.body) == b"hello world" and request.body_complete and not framer.failed


@pytest.mark.parametrize("coding", [b"chunked", b"Chunked", b"gzip, chunked", b"gzip,chunked"])
def test_the_last_transfer_coding_must_be_chunked(coding: bytes) -> None:
    framer = framed(b"POST / HTTP/1.1\r\nTransfer-Encoding: " + coding + b"\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
    assert bytes(framer.requests[0].body) == b"abc" and framer.requests[0].body_complete


def test_chunked_wins_over_content_length() -> None:
    framer = framed(b"POST / HTTP/1.1\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"2\r\nab\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n")
    assert [bytes(r.body) for r in framer.requests] == [b"ab", b""] and not framer.failed


def test_chunk_sizes_are_hex_and_may_be_large() -> None:
    body = b"x" * 0x1F
    framer = framed(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1f \r\n" + body + b"\r\n0\r\n\r\n")
    assert bytes(framer.requests[0].body) == body


@pytest.mark.parametrize("feed", [framed, one_by_one])
def test_pipelined_requests_are_split_at_their_framing(feed) -> None:
    data = POST + CHUNKED + b"GET /mock/v1/dataset-jobs/j1 HTTP/1.1\r\nHost: x\r\n\r\n" + POST
    framer = feed(data)
    assert [(r.method, bytes(r.body)) for r in framer.requests] == [
        ("POST", b"hello"), ("POST", b"hello world"), ("GET", b""), ("POST", b"hello")]
    starts = [r.start for r in framer.requests]
    assert starts == [0, len(POST), len(POST) + len(CHUNKED), len(data) - len(POST)]
    assert all(r.head_complete and r.body_complete for r in framer.requests)


def test_feed_returns_the_heads_completed_by_that_call() -> None:
    framer = RequestFramer()
    assert framer.feed(POST[:10]) == []
    assert framer.feed(POST[10:] + POST[:-2]) == framer.requests
    assert framer.feed(POST[-2:]) == []


def test_a_partial_head_is_kept_as_far_as_it_came() -> None:
    framer = framed(POST[:30])
    (request,) = framer.requests
    assert request.head == POST[:30] and not request.head_complete and request.method == ""
    framer.feed(POST[30:60])
    assert request.head == POST[:60] and not request.head_complete


@pytest.mark.parametrize(("cut", "kept"), [(len(POST) - 5, b""), (len(POST) - 2, b"hel")])
def test_a_partial_body_is_kept_and_not_complete(cut: int, kept: bytes) -> None:
    framer = framed(POST[:cut])
    (request,) = framer.requests
    assert request.head_complete and not request.body_complete and bytes(request.body) == kept


def test_a_partial_chunked_body_is_kept() -> None:
    framer = framed(CHUNKED[:CHUNKED.index(b" world") + 3])
    assert bytes(framer.requests[0].body) == b"hello wo" and not framer.requests[0].body_complete


def test_a_body_beyond_the_limit_is_cut_and_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_framing, "MAX_BODY_BYTES", 3)
    framer = framed(POST, POST)
    assert [bytes(r.body) for r in framer.requests] == [b"hel", b"hel"]  # the framing went on by Content-Length
    assert all(r.body_truncated and r.body_complete for r in framer.requests)


def test_a_body_exactly_at_the_limit_is_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_framing, "MAX_BODY_BYTES", 5)
    assert not framed(POST).requests[0].body_truncated


def test_zero_content_length_is_no_body() -> None:
    framer = framed(b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\nGET / HTTP/1.1\r\n\r\n")
    assert len(framer.requests) == 2 and all(r.body_complete for r in framer.requests)


def test_repeated_equal_content_lengths_are_one_length() -> None:
    framer = framed(b"POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab")
    assert bytes(framer.requests[0].body) == b"ab" and not framer.failed


def test_headers_keep_order_and_duplicates() -> None:
    framer = framed(b"POST / HTTP/1.1\r\nIdempotency-Key: a\r\nX-A:  spaced\t\r\nIdempotency-Key: b\r\n\r\n")
    request = framer.requests[0]
    assert request.header_values("idempotency-key") == [b"a", b"b"]
    assert request.header("idempotency-key") is None  # two values: no single one
    assert request.header("x-a") == b"spaced" and request.header("absent") is None


@pytest.mark.parametrize(("data", "problem"), [
    (b"POST /x\r\n\r\n", "not an HTTP/1.1 request line"),
    (b"POST  /x HTTP/1.1\r\n\r\n", "not an HTTP/1.1 request line"),
    (b"P(ST /x HTTP/1.1\r\n\r\n", "not an HTTP/1.1 request line"),
    (b" /x HTTP/1.1\r\n\r\n", "not an HTTP/1.1 request line"),
    (b"POST /x HTTP/2.0\r\n\r\n", "not an HTTP/1.1 request line"),
    (b"POST /x HTTP/1.1\r\nno colon\r\n\r\n", "a header line without a field name"),
    (b"POST /x HTTP/1.1\r\n: empty\r\n\r\n", "a header line without a field name"),
    (b"POST /x HTTP/1.1\r\nBad Name: x\r\n\r\n", "a header line without a field name"),
    (b"POST /x HTTP/1.1\r\n folded\r\n\r\n", "a header line without a field name"),
])
def test_heads_it_cannot_read(data: bytes, problem: str) -> None:
    with pytest.raises(FramingError, match=problem):
        parse_head(data.split(b"\r\n\r\n")[0])
    framer = framed(data + b"rest")
    assert framer.failed
    (request,) = framer.requests
    assert request.unframed and not request.head_complete and bytes(request.body) == b"rest"


@pytest.mark.parametrize("headers", [
    b"Transfer-Encoding: gzip\r\n", b"Transfer-Encoding: chunked, gzip\r\n",
    b"Content-Length: 1\r\nContent-Length: 2\r\n", b"Content-Length: -1\r\n", b"Content-Length: +1\r\n",
    b"Content-Length: 1x\r\n", b"Content-Length: " + b"9" * 19 + b"\r\n", b"Content-Length: \r\n",
])
def test_framings_it_refuses(headers: bytes) -> None:
    framer = framed(b"POST /x HTTP/1.1\r\n" + headers + b"\r\nbody")
    assert framer.failed
    (request,) = framer.requests
    assert request.unframed and bytes(request.body) == b"body"


def test_eighteen_digits_of_content_length_are_still_a_length() -> None:
    framer = framed(b"POST /x HTTP/1.1\r\nContent-Length: " + b"0" * 17 + b"3\r\n\r\nabc")
    assert not framer.failed and bytes(framer.requests[0].body) == b"abc"


@pytest.mark.parametrize(("chunks", "problem"), [
    (b"g\r\n", "invalid chunk size"),
    (b"\r\n", "invalid chunk size"),
    (b";ext\r\n", "invalid chunk size"),
    (b"1" * 17 + b"\r\n", "invalid chunk size"),
    (b"3\r\nabcd\r\n", "chunk data longer than its size"),
    (b"x" * 4097, "a chunk line over 4 KiB"),
])
def test_chunk_streams_it_refuses(chunks: bytes, problem: str) -> None:
    framer = framed(b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks)
    assert framer.failed and framer.requests[0].unframed
    assert framer.requests[0].head_complete  # the head was read: only its body is unframed


def test_a_chunk_line_of_4_kib_is_still_waited_for() -> None:
    assert not framed(b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + b"0" * 4096).failed


def test_a_head_over_64_kib_ends_framing_however_it_arrives() -> None:
    head = b"POST /x HTTP/1.1\r\nX-Big: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n"
    assert framed(head).failed
    assert framed(*(head[i:i + 4096] for i in range(0, len(head), 4096))).failed
    assert framed(head[:MAX_HEAD_BYTES]).failed is False  # still waiting for the rest of its head
    assert framed(head[:MAX_HEAD_BYTES + 1]).failed


def test_a_head_of_64_kib_is_read() -> None:
    line = b"POST /x HTTP/1.1\r\nX-Big: "
    head = line + b"a" * (MAX_HEAD_BYTES - len(line)) + b"\r\n\r\n"
    assert head.index(b"\r\n\r\n") == MAX_HEAD_BYTES
    framer = framed(head)
    assert not framer.failed and framer.requests[0].head_complete


def test_after_a_failure_every_later_byte_goes_to_the_last_request() -> None:
    framer = framed(POST, b"garbage\r\n\r\n", POST)
    assert framer.failed and len(framer.requests) == 2
    assert framer.requests[0].body_complete and not framer.requests[0].unframed
    assert framer.requests[1].unframed and bytes(framer.requests[1].body) == POST
    assert framer.requests[1].start == len(POST)
    assert framer.feed(b"more") == [] and bytes(framer.requests[1].body).endswith(b"more")


def test_a_failure_mid_body_keeps_the_request_it_was_in() -> None:
    framer = framed(b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\nzz\r\n")
    (request,) = framer.requests
    assert request.unframed and bytes(request.body).startswith(b"ab")


def test_raw_request_defaults() -> None:
    request = RawRequest(start=7)
    assert (request.head, request.method, request.headers, bytes(request.body)) == (b"", "", [], b"")
    assert not (request.head_complete or request.body_complete or request.body_truncated or request.unframed)
