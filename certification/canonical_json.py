"""Canonical JSON for evidence artifacts (seed: "Artifacts and evidence").

Sorted keys, UTF-8, no insignificant whitespace, finite numbers only. The content digest of an
artifact is SHA-256 over the canonical bytes of its body without the ``content_digest`` field,
so any reader recomputes it from the file alone.

Hand-written on purpose: RFC 8785 (JCS) libraries exist, but the artifacts only need a stable
form that this project's own verifier and any ``json.dumps(sort_keys=True)`` reader agree on;
floats are limited to ratios and seconds, whose Python ``repr`` is the shortest round-trip form.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

DIGEST_FIELD = "content_digest"
MAX_DEPTH = 64


class CanonicalJsonError(ValueError):
    """A value that has no canonical JSON form (NaN, infinity, a non-string key, too deep)."""


def _check(value: Any, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise CanonicalJsonError(f"nested deeper than {MAX_DEPTH}")
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalJsonError("NaN and infinity have no JSON form")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalJsonError("object keys must be strings")
            _check(item, depth + 1)
        return
    if isinstance(value, list | tuple):
        for item in value:
            _check(item, depth + 1)
        return
    raise CanonicalJsonError(f"{type(value).__name__} is not a JSON value")


def canonical_bytes(value: Any) -> bytes:
    _check(value, 0)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def content_digest(body: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical body without its own digest field."""
    without = {key: value for key, value in body.items() if key != DIGEST_FIELD}
    return "sha256:" + sha256_hex(canonical_bytes(without))


def with_content_digest(body: Mapping[str, Any]) -> dict[str, Any]:
    sealed = {key: value for key, value in body.items() if key != DIGEST_FIELD}
    sealed[DIGEST_FIELD] = content_digest(sealed)
    return sealed


def check_content_digest(body: Mapping[str, Any]) -> bool:
    stated = body.get(DIGEST_FIELD)
    return isinstance(stated, str) and stated == content_digest(body)
