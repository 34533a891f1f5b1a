"""Bounded JSON parsing and pointer extraction (pure)."""

from __future__ import annotations

import json

import pytest

from sink.contracts.transport import ResponseBounds
from sink.transport.bounded_json import JsonRefused, extract_scalars, parse_bounded, resolve_pointer
from sink.transport.response import allowlisted_headers, evidence_for, read_bounded

SMALL = ResponseBounds(max_body_bytes=4096, max_depth=4, max_fields=20, max_string_length=16)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "empty_body"),
        (b"   ", "empty_body"),
        (b"[" * 5 + b"]" * 5, "too_deep"),
        (json.dumps(list(range(25))).encode(), "too_many_fields"),
        (json.dumps({"a": "x" * 17}).encode(), "string_too_long"),
        (json.dumps({"x" * 17: 1}).encode(), "string_too_long"),
        (json.dumps({"a": "\u00e9" * 17}).encode(), "string_too_long"),
        (b'{"a": 1, "a": 2}', "duplicate_key"),
        (b'{"a": NaN}', "not_json"),
        (b'{"a": ', "not_json"),
        (b"\xff\xfe", "not_utf8"),
        (b"x" * 4097, "body_too_large"),
    ],
)
def test_refusals(body: bytes, reason: str) -> None:
    with pytest.raises(JsonRefused) as refused:
        parse_bounded(body, SMALL)
    assert refused.value.reason == reason


def test_at_the_bounds_is_accepted() -> None:
    assert parse_bounded(b"[[[[1]]]]", SMALL) == [[[[1]]]]
    assert parse_bounded(b"[[[[]],[[]]],[[[]]]]", SMALL) == [[[[]], [[]]], [[[]]]]  # depth is not a count
    assert parse_bounded(json.dumps(list(range(19))).encode(), SMALL) == list(range(19))  # 20 values
    with pytest.raises(JsonRefused):
        parse_bounded(json.dumps(list(range(20))).encode(), SMALL)
    escaped = b'{"a": "' + b"\\u0041" * 16 + b'"}'  # 96 source characters, 16 decoded
    assert parse_bounded(escaped, SMALL) == {"a": "A" * 16}
    assert parse_bounded(json.dumps({"k" * 16: 1}).encode(), SMALL) == {"k" * 16: 1}
    exact = b'"' + b"x" * 14 + b'"' + b" " * (SMALL.max_body_bytes - 16)
    assert parse_bounded(exact, SMALL) == "x" * 14
    assert parse_bounded(json.dumps(list(range(18))).encode(), SMALL) == list(range(18))
    assert parse_bounded(json.dumps({"a": "x" * 16}).encode(), SMALL) == {"a": "x" * 16}
    assert parse_bounded(b'{"s": "[[[[[[[[", "t": ",,,,,,,,,,,,"}', SMALL) == {"s": "[[[[[[[[", "t": ",,,,,,,,,,,,"}


def test_pointers_yield_only_requested_scalars() -> None:
    document = {"job_id": "j1", "n": 3, "ok": True, "none": None, "f": 1.5, "obj": {"a/b": {"~x": "v"}},
                "list": ["a", "b"]}
    scalars = extract_scalars(document, ["/job_id", "/n", "/ok", "/none", "/f", "/obj", "/obj/a~1b/~0x",
                                         "/list/1", "/list/01", "/list/2", "/list/9", "/missing", "job_id"])
    assert scalars == {"/job_id": "j1", "/n": 3, "/ok": True, "/none": None, "/obj/a~1b/~0x": "v", "/list/1": "b"}
    assert resolve_pointer(document, "") is document


def test_headers_are_allowlisted_and_bounded() -> None:
    raw = [("X-Unlisted", "u"), ("Retry-After", "5"), ("Set-Cookie", "s=1"), ("Authorization", "x"), ("X-Custom", "c"),
           ("Location", "/a"), ("Location", "/b"), ("Operation-Location", "x" * 600), ("Content-Type", "a\x01b")]
    kept = allowlisted_headers(raw, ["x-custom", "set-cookie"], ResponseBounds())
    assert kept == {"retry-after": "5", "x-custom": "c", "location": "/a"}
    edge = allowlisted_headers([("Location", "~ /" + "x" * 509)], [], ResponseBounds())
    assert edge == {"location": "~ /" + "x" * 509}  # exactly 512, space and tilde allowed


def test_read_bounded_stops_one_byte_past_the_limit() -> None:
    chunks = iter([b"abc", b"def", b"ghi", b"never"])
    data, complete = read_bounded(chunks, 5)
    assert (data, complete) == (b"abcdef", False)
    assert next(chunks) == b"ghi"  # the rest was not read
    assert read_bounded(iter([b"abc", b"de"]), 5) == (b"abcde", True)


def test_evidence_problem_only_when_pointers_are_asked() -> None:
    bounds = ResponseBounds()
    plain = evidence_for(status=200, headers={}, body=b"not json", complete=True, pointers=(), bounds=bounds)
    assert plain.parse_problem is None and plain.body_size == 8
    asked = evidence_for(status=200, headers={}, body=b"not json", complete=True, pointers=("/a",), bounds=bounds)
    assert asked.parse_problem == "not_json" and asked.scalars == {}
    encoded = evidence_for(status=200, headers={"content-encoding": "gzip"}, body=b'{"a":1}', complete=True,
                           pointers=("/a",), bounds=bounds)
    assert encoded.parse_problem == "content_encoded"
    large = evidence_for(status=200, headers={"x": "y"}, body=b'{"a":1}', complete=False, pointers=("/a",),
                         bounds=bounds)
    assert large.parse_problem == "body_too_large" and large.scalars == {}
    assert (large.status, dict(large.headers), large.body_size) == (200, {"x": "y"}, 7)
    assert large.body_digest == "sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    good = evidence_for(status=201, headers={"content-encoding": "IDENTITY"}, body=b'{"a":1}', complete=True,
                        pointers=("/a",), bounds=bounds)
    assert good.scalars == {"/a": 1} and good.parse_problem is None
    assert (good.status, dict(good.headers), good.body_size) == (201, {"content-encoding": "IDENTITY"}, 7)
    assert good.body_digest == "sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
