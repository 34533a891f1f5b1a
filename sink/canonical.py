"""Canonical, versioned, typed, length-delimited encoding and the digest built on it.

* each value carries a one-byte type tag, and strings, bytes, integers, lists and mappings carry
  their length (8-byte big-endian), so ``("ab", "c")`` and ``("a", "bc")`` encode differently;
* mappings are encoded with their keys sorted, so dict order never matters;
* a digest is domain-separated by the encoding version and a purpose label;
* floats are refused: their text form is not canonical across producers.

Pure: no I/O, no clock, no dependence on ``PYTHONHASHSEED``. ``sink.identity`` builds every digest
of the design on :func:`hash_fields`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Union

IDENTITY_ENCODING_VERSION = "restproof.identity.v1"
DIGEST_PREFIX = "sha256:"

CanonicalValue = Union[  # noqa: UP007 - a recursive alias needs the string forward references
    None, bool, int, str, bytes, Sequence["CanonicalValue"], Mapping[str, "CanonicalValue"]
]

_LENGTH_BYTES = 8
_MAX_DEPTH = 64


def _length(n: int) -> bytes:
    return n.to_bytes(_LENGTH_BYTES, "big")


def _encode(value: CanonicalValue, out: bytearray, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ValueError("canonical value nested too deeply")
    # Exact-type tests first: identity digests are mostly str and int fields, and one ``type()``
    # comparison is cheaper than the isinstance ladder below (which still decides every subclass).
    kind = type(value)
    if kind is str:
        data = value.encode("utf-8")  # type: ignore[union-attr]  # lone surrogates raise: no canonical bytes
        out += b"S" + _length(len(data)) + data
        return
    if kind is int:
        text = str(value).encode("ascii")
        out += b"I" + _length(len(text)) + text
        return
    # bool before int: bool is a subclass of int and must stay a distinct type.
    if value is None:
        out += b"N"
    elif isinstance(value, bool):
        out += b"T" if value else b"F"
    elif isinstance(value, int):
        text = str(value).encode("ascii")
        out += b"I" + _length(len(text)) + text
    elif isinstance(value, str):
        data = value.encode("utf-8")
        out += b"S" + _length(len(data)) + data
    elif isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        out += b"Y" + _length(len(data)) + data
    elif isinstance(value, float):
        raise TypeError("floats are not canonical identity inputs; use int or str")
    elif isinstance(value, Mapping):
        keys = list(value.keys())
        if not all(isinstance(key, str) for key in keys):
            raise TypeError("canonical mapping keys must be str")
        out += b"M" + _length(len(keys))
        for key in sorted(keys):
            _encode(key, out, depth + 1)
            _encode(value[key], out, depth + 1)
    elif isinstance(value, Sequence):
        out += b"L" + _length(len(value))
        for item in value:
            _encode(item, out, depth + 1)
    else:
        raise TypeError(f"unsupported canonical value type: {type(value).__name__}")


def canonical_encode(value: CanonicalValue) -> bytes:
    """The typed, length-delimited canonical bytes of ``value`` (without version or purpose)."""
    out = bytearray()
    _encode(value, out, 0)
    return bytes(out)


def hash_fields(purpose: str, fields: Mapping[str, CanonicalValue]) -> str:
    """Domain-separated digest of named fields: ``sha256:<hex>``."""
    if not purpose:
        raise ValueError("a digest purpose label is required")
    encoded = canonical_encode([IDENTITY_ENCODING_VERSION, purpose, fields])
    return DIGEST_PREFIX + hashlib.sha256(encoded).hexdigest()


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
"""Compiled once: every journal record checks its digests (thousands per delivery), and
``re.fullmatch`` with a pattern string pays the cache lookup each time."""


def is_digest(value: str) -> bool:
    return _DIGEST.fullmatch(value) is not None


def require_digest(name: str, value: str) -> str:
    if not is_digest(value):
        raise ValueError(f"{name} must be a sha256:<64 hex> digest")
    return value
