"""Expected content digests in a receiver's documented summary scheme.

A profile's read-only summary query (``verification.summary``) names the scheme the receiver uses
for its content digest. The sink computes the expected digest of the rows it sealed, written from
the receiver's published specification (docs/mock-receiver.md, "Canonical row form and digests"),
not from the receiver's code: two independent implementations must agree for verification to pass.

``mock-receiver.rows.v1``: every value reduced to text (string as is, true/false, integers in
decimal, null distinct from the empty string); a row is a 4-byte field count then, per key in
code-point order, the framed key and ``N`` or ``S`` + framed text; the digest is SHA-256 over the
framed scheme label and every framed row encoding in ascending byte order (a multiset: row order
does not matter). ``frame(x)`` is an 8-byte big-endian length followed by ``x``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from sink.contracts.transport import JsonScalar

MOCK_RECEIVER_ROWS_V1 = "mock-receiver.rows.v1"


def _frame(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


def _text(value: JsonScalar) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return value


def encode_row(row: Mapping[str, JsonScalar]) -> bytes:
    out = bytearray(len(row).to_bytes(4, "big"))
    for key in sorted(row):
        out += _frame(key.encode("utf-8"))
        text = _text(row[key])
        out += b"N" if text is None else b"S" + _frame(text.encode("utf-8"))
    return bytes(out)


def rows_digest(rows: Iterable[Mapping[str, JsonScalar]], scheme: str = MOCK_RECEIVER_ROWS_V1) -> str:
    """The scheme's digest of ``rows`` as the receiver will hold them (values as sent on the wire:
    text for CSV payloads, JSON scalars for JSON payloads)."""
    if scheme != MOCK_RECEIVER_ROWS_V1:
        raise ValueError(f"unknown summary digest scheme {scheme!r}")
    hasher = hashlib.sha256(_frame(scheme.encode()))
    for encoded in sorted(encode_row(row) for row in rows):
        hasher.update(_frame(encoded))
    return "sha256:" + hasher.hexdigest()
