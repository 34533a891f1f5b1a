"""Expected content digests in a receiver's documented summary scheme.

A profile's read-only summary query (``verification.summary``) names the scheme the receiver uses
for its content digest. The sink computes the expected digest of the rows it sealed, written from
the receiver's published specification (docs/mock-receiver.md, "Canonical row form and digests"),
not from the receiver's code: two independent implementations must agree for verification to pass.

Both schemes share the row encoding: every value reduced to text (string as is, true/false,
integers in decimal, an integral float below 2^53 as an integer and any other float as Python
``repr``, null distinct from the empty string); a row is a 4-byte field count then, per key in
code-point order, the framed key and ``N`` or ``S`` + framed text. ``frame(x)`` is an 8-byte
big-endian length followed by ``x``.

* ``mock-receiver.rows.v1``: SHA-256 over the framed label and every framed row encoding in
  ascending byte order. A multiset, but computing it means holding and sorting every row.
* ``mock-receiver.rows.v2``: each row's term is SHA-256(frame(label) || frame(encoding)) read as a
  256-bit big-endian integer; the digest is SHA-256(frame(label) || 8-byte row count || the sum of
  the terms mod 2^256 as 32 bytes). One pass, constant memory, and sums of disjoint parts (the
  days of a frozen parent) add up to the sum of the whole, so a child's expected digest is
  composed from per-day sums computed once when the parent was frozen.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sink.contracts.profile_verification import MOCK_RECEIVER_ROWS_V1, MOCK_RECEIVER_ROWS_V2

WireValue = str | int | float | bool | None
"""A value as the receiver decodes it from the wire (JSON numbers may be floats)."""
_MODULUS = 1 << 256


def _frame(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


_V2_LABEL = _frame(MOCK_RECEIVER_ROWS_V2.encode())


def _text(value: WireValue) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return repr(value)
    return value


_KEY_FRAMES: dict[str, bytes] = {}
_KEY_FRAMES_MAX = 4096
"""Framed column names, cached: a day's rows repeat the same few keys (bounded, so that hostile
keys cannot grow it without limit)."""


def _framed_key(key: str) -> bytes:
    framed = _KEY_FRAMES.get(key)
    if framed is None:
        framed = _frame(key.encode("utf-8"))
        if len(_KEY_FRAMES) < _KEY_FRAMES_MAX:
            _KEY_FRAMES[key] = framed
    return framed


def encode_row(row: Mapping[str, WireValue]) -> bytes:
    parts = [len(row).to_bytes(4, "big")]
    for key in sorted(row):
        value = row[key]
        text = value if type(value) is str else _text(value)
        if text is None:
            parts += (_framed_key(key), b"N")
        else:
            data = text.encode("utf-8")
            parts += (_framed_key(key), b"S", len(data).to_bytes(8, "big"), data)
    return b"".join(parts)


@dataclass(frozen=True, slots=True)
class RowsSum:
    """The state of a ``mock-receiver.rows.v2`` digest: row count and sum of terms mod 2^256."""

    count: int = 0
    total: int = 0

    def __add__(self, other: RowsSum) -> RowsSum:
        return RowsSum(self.count + other.count, (self.total + other.total) % _MODULUS)

    def hex(self) -> str:
        return f"{self.total:064x}"

    def digest(self) -> str:
        final = hashlib.sha256(_V2_LABEL + self.count.to_bytes(8, "big") + self.total.to_bytes(32, "big"))
        return "sha256:" + final.hexdigest()


def rows_sum(rows: Iterable[Mapping[str, WireValue]]) -> RowsSum:
    count = total = 0
    for row in rows:
        term = hashlib.sha256(_V2_LABEL + _frame(encode_row(row))).digest()
        total += int.from_bytes(term, "big")
        count += 1
    return RowsSum(count, total % _MODULUS)


def rows_digest(rows: Iterable[Mapping[str, WireValue]], scheme: str = MOCK_RECEIVER_ROWS_V1) -> str:
    """The scheme's digest of ``rows`` as the receiver will hold them (values as sent on the wire:
    text for CSV payloads, JSON scalars for JSON payloads)."""
    if scheme == MOCK_RECEIVER_ROWS_V2:
        return rows_sum(rows).digest()
    if scheme != MOCK_RECEIVER_ROWS_V1:
        raise ValueError(f"unknown summary digest scheme {scheme!r}")
    hasher = hashlib.sha256(_frame(scheme.encode()))
    for encoded in sorted(encode_row(row) for row in rows):
        hasher.update(_frame(encoded))
    return "sha256:" + hasher.hexdigest()


__all__ = ["MOCK_RECEIVER_ROWS_V1", "MOCK_RECEIVER_ROWS_V2", "RowsSum", "WireValue", "encode_row", "rows_digest",
           "rows_sum"]
