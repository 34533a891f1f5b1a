"""Properties of the receiver's own canonical row form and body parsers."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mr_support import csv_bytes

from mock_receiver.behaviour import Limits
from mock_receiver.canonical import encode_row, multiset_digest, ordered_digest
from mock_receiver.payloads import decode_body

pytestmark = pytest.mark.timeout(120)

_TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r"), max_size=12)
_KEYS = st.lists(st.text("abcdefgh_", min_size=1, max_size=6), min_size=1, max_size=4, unique=True)


@st.composite
def text_rows(draw: st.DrawFn) -> list[dict[str, str]]:
    keys = draw(_KEYS)
    return draw(st.lists(st.fixed_dictionaries({key: _TEXT for key in keys}), min_size=1, max_size=8))


@given(text_rows(), st.randoms())
@settings(max_examples=60, deadline=None)
def test_multiset_digest_ignores_order_and_ordered_digest_does_not(rows, random) -> None:
    encoded = [encode_row(row) for row in rows]
    shuffled = list(encoded)
    random.shuffle(shuffled)
    assert multiset_digest(shuffled) == multiset_digest(encoded)
    if shuffled != encoded:
        assert ordered_digest(shuffled) != ordered_digest(encoded)


@given(text_rows())
@settings(max_examples=60, deadline=None)
def test_csv_json_ndjson_and_gzip_decode_to_the_same_canonical_rows(rows) -> None:
    limits = Limits()
    expected = [encode_row(row) for row in rows]
    bodies = [
        ("application/json", None, json.dumps(rows, ensure_ascii=False).encode()),
        # Raw U+2028, U+0085 and friends inside strings must not split an NDJSON record.
        ("application/x-ndjson", None, "\n".join(json.dumps(row, ensure_ascii=False) for row in rows).encode()),
        ("text/csv", None, csv_bytes(rows)),
        ("text/csv", "gzip", gzip.compress(csv_bytes(rows))),
    ]
    for content_type, encoding, body in bodies:
        assert decode_body(body, content_type, encoding, limits).encoded == expected, content_type


@given(st.integers(-(2**52), 2**52))
def test_numbers_and_their_text_encode_alike(number: int) -> None:
    assert encode_row({"v": number}) == encode_row({"v": str(number)}) == encode_row({"v": float(number)})


def test_null_and_empty_string_stay_distinct() -> None:
    assert encode_row({"v": None}) != encode_row({"v": ""})
    assert encode_row({"v": True}) == encode_row({"v": "true"})
    assert encode_row({"a": "1", "b": "2"}) == encode_row({"b": "2", "a": "1"})
    # Length framing: moving a character between key and value changes the encoding.
    assert encode_row({"ab": "c"}) != encode_row({"a": "bc"})
