"""Kill tests for sink/transport/bounded_json.py (mutation gate, tools/mutation): strings are not
counted as values twice, closing a container lowers the depth by one, the source-length bound of
the pre-parse scan, and a parser recursion failure is a stable refusal, not a crash."""

from __future__ import annotations

import json

from sink.contracts.transport import ResponseBounds
from sink.transport.bounded_json import JsonRefused, parse_bounded

SMALL = ResponseBounds(max_body_bytes=4096, max_depth=4, max_fields=20, max_string_length=16)
ASTRAL = "\\ud83d\\ude00"  # one code point, escaped as a surrogate pair: 12 source characters


def _reason(body: bytes, bounds: ResponseBounds = SMALL) -> str | None:
    try:
        parse_bounded(body, bounds)
    except JsonRefused as refused:
        return refused.reason
    return None


def test_a_list_of_strings_at_the_value_bound_is_accepted() -> None:
    strings = [chr(ord("a") + i) for i in range(19)]  # the list and 19 elements: 20 values
    assert parse_bounded(json.dumps(strings).encode(), SMALL) == strings
    assert _reason(json.dumps([*strings, "t"]).encode()) == "too_many_fields"


def test_depth_falls_by_one_per_closed_container() -> None:
    assert parse_bounded(b"[[],[[[1]]]]", SMALL) == [[], [[[1]]]]
    assert _reason(b"[[],[[[[1]]]]]") == "too_deep"


def test_the_scan_bounds_escaped_source_at_six_characters_per_allowed_one() -> None:
    # 16 allowed characters: at most 96 escaped source characters before anything is decoded.
    at_bound = b'["' + (ASTRAL * 8).encode() + b'"]'  # 96 source characters, 8 code points
    assert parse_bounded(at_bound, SMALL) == ["\U0001f600" * 8]
    over = b'["' + (ASTRAL * 8).encode() + b'a"]'  # 97 source characters, only 9 code points
    assert _reason(over) == "string_too_long"


def test_parser_recursion_is_refused_as_not_json() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    bounds = ResponseBounds(max_body_bytes=len(deep), max_depth=200_000, max_fields=200_000,
                            max_string_length=16)
    assert _reason(deep, bounds) == "not_json"
