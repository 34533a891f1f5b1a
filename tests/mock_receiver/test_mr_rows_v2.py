"""``mock-receiver.rows.v2``: an order-independent summary digest that streams and composes, on
the receiver's side (the sink's independent implementation is checked against it elsewhere)."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mr_support import behaviour_with, client_for, rows_for

from mock_receiver.canonical import MultisetSum, encode_row, multiset_sum_digest

pytestmark = pytest.mark.timeout(60)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=8))
rows = st.lists(st.dictionaries(st.text(min_size=1, max_size=4), scalars, max_size=4), max_size=12)
SUMMARY = "/mock/v1/resources/measurements/summary"
BATCHES = "/mock/v1/resources/measurements/batches"
DAY1 = {"range_start": "2026-03-01", "range_end": "2026-03-02"}


def _framed(data: bytes) -> bytes:
    return struct.pack(">Q", len(data)) + data


def test_the_digest_is_the_documented_formula() -> None:
    # docs/mock-receiver.md: term = SHA-256(frame(label) || frame(row)); digest over label, count, sum.
    label = b"mock-receiver.rows.v2"
    encoded = [encode_row({"a": "1"}), encode_row({"a": "2", "b": None})]
    total = sum(int.from_bytes(hashlib.sha256(_framed(label) + _framed(e)).digest(), "big") for e in encoded)
    expected = hashlib.sha256(_framed(label) + struct.pack(">Q", 2) + (total % 2**256).to_bytes(32, "big"))
    assert multiset_sum_digest(encoded) == "sha256:" + expected.hexdigest()


@settings(max_examples=60, deadline=None)
@given(rows, st.randoms(use_true_random=False), st.integers(0, 12))
def test_order_never_matters_and_parts_add_up_to_the_whole(batch: list[dict[str, Any]], random: Any,
                                                           cut: int) -> None:
    encoded = [encode_row(row) for row in batch]
    shuffled = list(encoded)
    random.shuffle(shuffled)
    assert multiset_sum_digest(shuffled) == multiset_sum_digest(encoded)
    head, tail = MultisetSum(), MultisetSum()
    for item in encoded[:cut]:
        head.add(item)
    for item in encoded[cut:]:
        tail.add(item)
    head.merge(tail)
    assert head.digest() == multiset_sum_digest(encoded)
    assert MultisetSum.from_state(head.state()).digest() == head.digest()


def test_a_changed_missing_or_repeated_row_changes_the_digest() -> None:
    base = [encode_row({"a": "1"}), encode_row({"a": "2"})]
    digest = multiset_sum_digest(base)
    assert multiset_sum_digest([base[0], encode_row({"a": "3"})]) != digest
    assert multiset_sum_digest(base[:1]) != digest
    assert multiset_sum_digest([*base, base[0]]) != digest
    assert multiset_sum_digest([]) != multiset_sum_digest([encode_row({})])  # the count is in the digest


def test_the_sum_wraps_modulo_two_to_the_256() -> None:
    top = MultisetSum(1, 2**256 - 1)
    top.merge(MultisetSum(1, 5))
    assert top.total == 4 and top.count == 2
    assert len(top.state().split(":")[1]) == 64


@pytest.mark.parametrize("storage", ["rows", "ledger_only"])
def test_summaries_carry_the_v2_digest_of_what_is_applied(tmp_path: Path, storage: str) -> None:
    batch = rows_for(["2026-03-01", "2026-03-01"])
    with client_for(behaviour_with("json-batches", storage=storage), tmp_path) as client:
        empty = client.get(SUMMARY, params=DAY1).json()
        assert empty["content_digest_v2"] == multiset_sum_digest([])
        posted = client.post(BATCHES, params=DAY1, content=json.dumps(batch).encode(),
                             headers={"content-type": "application/json", "Idempotency-Key": "key-v2-0001"})
        assert posted.status_code == 201
        summary = client.get(SUMMARY, params=DAY1).json()
    assert summary["row_count"] == 2
    assert summary["content_digest_v2"] == multiset_sum_digest(encode_row(row) for row in batch)
