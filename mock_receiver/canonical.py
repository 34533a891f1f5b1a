"""The receiver's own canonical forms and digests.

Deliberately independent of any client-side hashing: evidence is only honest
when the receiver computes its ground truth with code that cannot share the
sender's bugs. The encoding is documented in docs/mock-receiver.md.

Row encoding (``mock-receiver.row.v1``): every value is reduced to text
(JSON null stays distinct from the empty string) so a row delivered as CSV and
the same row delivered as JSON encode identically.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Iterable, Mapping, Sequence

Scalar = str | int | float | bool | None
Row = Mapping[str, Scalar]

_ROWS_DOMAIN = b"mock-receiver.rows.v1"
_ORDERED_DOMAIN = b"mock-receiver.rows-ordered.v1"
_FIELDS_DOMAIN = b"mock-receiver.fields.v1"
_SUM_DOMAIN = b"mock-receiver.rows.v2"
_SUM_MODULUS = 1 << 256


def _framed(data: bytes) -> bytes:
    return struct.pack(">Q", len(data)) + data


def value_text(value: Scalar) -> str | None:
    """Type-insensitive text of a scalar; None for JSON null."""
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


def encode_row(row: Row) -> bytes:
    """Canonical bytes of one row: sorted keys, length-framed, null tagged."""
    parts = [struct.pack(">I", len(row))]
    for key in sorted(row):
        parts.append(_framed(key.encode("utf-8")))
        text = value_text(row[key])
        if text is None:
            parts.append(b"N")
        else:
            parts.append(b"S" + _framed(text.encode("utf-8")))
    return b"".join(parts)


def multiset_digest(encoded_rows: Iterable[bytes]) -> str:
    """Order-independent digest of a multiset of encoded rows (used by summaries)."""
    hasher = hashlib.sha256(_framed(_ROWS_DOMAIN))
    for encoded in sorted(encoded_rows):
        hasher.update(_framed(encoded))
    return "sha256:" + hasher.hexdigest()


class MultisetSum:
    """``mock-receiver.rows.v2``: an order-independent digest that streams and composes.

    Each row contributes ``SHA-256(frame("mock-receiver.rows.v2") || frame(row encoding))`` read as
    a 256-bit big-endian integer; the sum of those terms mod 2^256 and the row count make the state,
    so a summary is computed in one pass with constant memory, and the digests of disjoint parts
    (several effects, several days) add up to the digest of the whole. It proves agreement between
    two honest parties, not resistance to someone who chooses rows to collide (an additive multiset
    hash is open to generalised-birthday searches); v1's sorted digest remains for that.
    """

    __slots__ = ("count", "total")

    def __init__(self, count: int = 0, total: int = 0) -> None:
        self.count, self.total = count, total

    def add(self, encoded_row: bytes) -> None:
        term = hashlib.sha256(_framed(_SUM_DOMAIN) + _framed(encoded_row)).digest()
        self.total = (self.total + int.from_bytes(term, "big")) % _SUM_MODULUS
        self.count += 1

    def merge(self, other: MultisetSum) -> None:
        self.total = (self.total + other.total) % _SUM_MODULUS
        self.count += other.count

    def state(self) -> str:
        """What a ledger stores to compose later: ``<count>:<64 hex digits>``."""
        return f"{self.count}:{self.total:064x}"

    @classmethod
    def of(cls, encoded_rows: Iterable[bytes]) -> MultisetSum:
        accumulator = cls()
        for encoded in encoded_rows:
            accumulator.add(encoded)
        return accumulator

    @classmethod
    def from_state(cls, state: str) -> MultisetSum:
        count, total = state.split(":", 1)
        return cls(int(count), int(total, 16))

    def digest(self) -> str:
        final = hashlib.sha256(_framed(_SUM_DOMAIN) + struct.pack(">Q", self.count)
                               + self.total.to_bytes(32, "big"))
        return "sha256:" + final.hexdigest()


def multiset_sum_digest(encoded_rows: Iterable[bytes]) -> str:
    return MultisetSum.of(encoded_rows).digest()


def summary_digests(encoded_rows: Sequence[bytes]) -> dict[str, object]:
    """The count and both content digests a summary reports for the rows it covers."""
    return {"row_count": len(encoded_rows), "content_digest": multiset_digest(encoded_rows),
            "content_digest_v2": multiset_sum_digest(encoded_rows)}


def ordered_digest(encoded_rows: Iterable[bytes]) -> str:
    """Order-sensitive digest of a row sequence (request comparison)."""
    hasher = hashlib.sha256(_framed(_ORDERED_DOMAIN))
    for encoded in encoded_rows:
        hasher.update(_framed(encoded))
    return "sha256:" + hasher.hexdigest()


def bytes_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def fields_digest(*fields: str | None) -> str:
    """Digest of an ordered tuple of optional text fields (None distinct from "")."""
    hasher = hashlib.sha256(_framed(_FIELDS_DOMAIN))
    for field in fields:
        if field is None:
            hasher.update(b"N")
        else:
            hasher.update(b"S" + _framed(field.encode("utf-8")))
    return "sha256:" + hasher.hexdigest()


def canonical_json(document: object) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
