"""sink/canonical.py bounds and refusals that the identity algebra relies on (issue 14).

Every expected byte string is written out from the encoding's specification (tag byte, 8-byte
big-endian length, content), independently of the encoder.
"""

from __future__ import annotations

import hashlib
from enum import IntEnum, StrEnum
from typing import Any

import pytest

from sink import canonical


def _n(x: int) -> bytes:
    return x.to_bytes(8, "big")


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_nesting_bound_is_64_levels() -> None:
    # 64 list levels around a leaf put the leaf at depth 64: the deepest value accepted.
    encoded = canonical.canonical_encode(_nested(64))
    assert encoded == (b"L" + _n(1)) * 64 + b"S" + _n(4) + b"leaf"
    with pytest.raises(ValueError, match="nested too deeply"):
        canonical.canonical_encode(_nested(65))


def test_nesting_bound_counts_mapping_levels_like_list_levels() -> None:
    value: Any = "leaf"
    for _ in range(64):
        value = {"k": value}
    assert canonical.canonical_encode(value).endswith(b"S" + _n(4) + b"leaf")
    with pytest.raises(ValueError, match="nested too deeply"):
        canonical.canonical_encode({"k": value})


def test_nesting_bound_stops_a_self_referencing_list() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nested too deeply"):
        canonical.canonical_encode(loop)


@pytest.mark.parametrize("purpose", ["", None])
def test_a_purpose_label_is_required(purpose: Any) -> None:
    with pytest.raises(ValueError, match="purpose label is required"):
        canonical.hash_fields(purpose, {"v": 1})


def test_digest_is_sha256_of_version_purpose_and_fields() -> None:
    encoded = (
        b"L" + _n(3)
        + b"S" + _n(21) + b"restproof.identity.v1"
        + b"S" + _n(7) + b"purpose"
        + b"M" + _n(1) + b"S" + _n(1) + b"v" + b"I" + _n(1) + b"7"
    )
    assert canonical.IDENTITY_ENCODING_VERSION == "restproof.identity.v1"
    assert canonical.hash_fields("purpose", {"v": 7}) == "sha256:" + hashlib.sha256(encoded).hexdigest()


@pytest.mark.parametrize(("value", "expected"), [
    (None, b"N"),
    (True, b"T"),
    (False, b"F"),
    (0, b"I" + _n(1) + b"0"),
    (10, b"I" + _n(2) + b"10"),
    ("", b"S" + _n(0)),
    ("é", b"S" + _n(2) + "é".encode()),
    (b"", b"Y" + _n(0)),
    (bytearray(b"ab"), b"Y" + _n(2) + b"ab"),
    (memoryview(b"ab"), b"Y" + _n(2) + b"ab"),
    ((), b"L" + _n(0)),
    (("a", "b"), b"L" + _n(2) + b"S" + _n(1) + b"a" + b"S" + _n(1) + b"b"),
    ({}, b"M" + _n(0)),
])
def test_each_type_has_its_written_encoding(value: Any, expected: bytes) -> None:
    assert canonical.canonical_encode(value) == expected


def test_mapping_keys_are_sorted_and_must_be_text() -> None:
    assert canonical.canonical_encode({"b": None, "a": None}) == (
        b"M" + _n(2) + b"S" + _n(1) + b"a" + b"N" + b"S" + _n(1) + b"b" + b"N")
    with pytest.raises(TypeError, match="keys must be str"):
        canonical.canonical_encode({"a": 1, 2: 3})  # type: ignore[dict-item]


@pytest.mark.parametrize("bad", [1.0, float("nan"), {1.5}, object()])
def test_non_canonical_values_are_refused(bad: Any) -> None:
    with pytest.raises(TypeError):
        canonical.canonical_encode(bad)


def test_lone_surrogates_are_refused() -> None:
    with pytest.raises(UnicodeEncodeError):
        canonical.canonical_encode("\ud800")


@pytest.mark.parametrize(("value", "ok"), [
    ("sha256:" + "0" * 64, True),
    ("sha256:" + "f" * 64, True),
    ("sha256:" + "F" * 64, False),
    ("sha256:" + "0" * 63, False),
    ("sha256:" + "0" * 65, False),
    ("sha512:" + "0" * 64, False),
    (" sha256:" + "0" * 64, False),
])
def test_digest_shape(value: str, ok: bool) -> None:
    assert canonical.is_digest(value) is ok
    if ok:
        assert canonical.require_digest("field", value) == value
    else:
        with pytest.raises(ValueError, match=r"^field must be a sha256:<64 hex> digest$"):
            canonical.require_digest("field", value)


class _Kind(StrEnum):
    A = "ab"


class _Level(IntEnum):
    TWO = 2


@pytest.mark.parametrize(("value", "expected"), [
    ("ab", b"S" + _n(2) + b"ab"),
    (_Kind.A, b"S" + _n(2) + b"ab"),  # a str subclass takes the isinstance path: the same bytes
    (12, b"I" + _n(2) + b"12"),
    (-3, b"I" + _n(2) + b"-3"),
    (_Level.TWO, b"I" + _n(1) + b"2"),
    (True, b"T"),  # never the integer 1
    (False, b"F"),
    (0, b"I" + _n(1) + b"0"),
    ("é", b"S" + _n(2) + "é".encode()),
])
def test_scalars_encode_by_type_not_by_class(value: Any, expected: bytes) -> None:
    # The encoder tests the exact types str and int first (the common case); subclasses and bool
    # must still come out as the specification says.
    assert canonical.canonical_encode(value) == expected


def test_a_lone_surrogate_still_has_no_canonical_bytes() -> None:
    with pytest.raises(UnicodeEncodeError):
        canonical.canonical_encode("\ud800")
