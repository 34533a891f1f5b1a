"""A bounded, allowlisted view of a response: status, a few headers, size, digest, scalars.

The raw body never leaves this module: it is read up to ``max_body_bytes`` (one byte more proves
it was larger), hashed, parsed within bounds and dropped. Only the allowlisted headers and the
requested JSON pointers become evidence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence

from sink.contracts.transport import JsonScalar, ResponseBounds, ResponseEvidence
from sink.transport.bounded_json import JsonRefused, extract_scalars, parse_bounded

STANDARD_HEADERS = frozenset(
    {
        "retry-after", "location", "operation-location", "content-type", "content-length",
        "content-encoding", "idempotent-replayed", "idempotency-key",
    }
)
_NEVER_EVIDENCE = frozenset({"authorization", "proxy-authorization", "set-cookie", "cookie", "www-authenticate"})


def allowlisted_headers(
    raw: Iterable[tuple[str, str]], extra: Sequence[str], bounds: ResponseBounds
) -> Mapping[str, str]:
    """Allowlisted names (lower case), first occurrence, visible ASCII within the length bound;
    anything else is dropped, never truncated."""
    wanted = (STANDARD_HEADERS | {name.lower() for name in extra}) - _NEVER_EVIDENCE
    kept: dict[str, str] = {}
    for name, value in raw:
        lowered = name.lower()
        if lowered not in wanted or lowered in kept:
            continue
        if len(value) > bounds.max_header_value_length or not all(" " <= ch <= "~" for ch in value):
            continue
        kept[lowered] = value
    return kept


def read_bounded(chunks: Iterator[bytes], limit: int) -> tuple[bytes, bool]:
    """(bytes read, complete): reading stops as soon as the body is known to exceed ``limit``."""
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        if len(buffer) > limit:
            return bytes(buffer), False
    return bytes(buffer), True


def evidence_for(
    *,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    complete: bool,
    pointers: Sequence[str],
    bounds: ResponseBounds,
) -> ResponseEvidence:
    """``complete`` False: the body exceeded ``max_body_bytes`` and ``body`` is the prefix read
    (size and digest then describe that prefix)."""
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    if not complete:
        return ResponseEvidence(status=status, headers=headers, body_size=len(body), body_digest=digest,
                                parse_problem="body_too_large")
    problem: str | None = None
    scalars: Mapping[str, JsonScalar] = {}
    encoding = headers.get("content-encoding", "identity").lower()
    if pointers:
        if encoding != "identity":
            problem = "content_encoded"
        else:
            try:
                scalars = extract_scalars(parse_bounded(body, bounds), pointers)
            except JsonRefused as refused:
                problem = refused.reason
    return ResponseEvidence(status=status, headers=headers, body_size=len(body), body_digest=digest,
                            scalars=dict(scalars),
                            parse_problem=problem)
