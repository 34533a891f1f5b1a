"""One NDJSON line -> one raw record, under the same strictness as every YAML document we read.

The stdlib parser is kept (it is C, and exact: numbers are handed over as text), with hooks that
close what it leaves open:

* a member name given twice in one object is ``source.duplicate_field`` (``json`` would keep the
  last one silently; ``bounded_yaml`` refuses the same in YAML);
* ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON: ``source.malformed_record``;
* a number of more than ``MAX_NUMBER_CHARS`` characters becomes an ``OversizedNumber`` (Python
  raises a bare ValueError for ints above 4 300 digits; the normalizer refuses it with the field's
  name, an ignored field may carry it);
* nesting deeper than ``MAX_DEPTH`` levels (the record's own object is the first) is
  ``source.nesting_too_deep`` — decided by counting, so the
  answer does not depend on how deep the interpreter's stack happens to be (``RecursionError``
  stays a backstop);
* a ``\\uD800``-style escape that pairs with nothing yields a string UTF-8 can not carry: the
  member holding it is ``source.invalid_unicode``.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from sink.source.errors import SourceError
from sink.source.port import MAX_NUMBER_CHARS, OversizedNumber

MAX_DEPTH = 64
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


class _Refused(Exception):
    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        self.code = code
        self.message = message
        self.field = field


def _members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused("source.duplicate_field", "a member name repeats in one object", key)
            seen.add(key)
    return members


def _integer(text: str) -> int | OversizedNumber:
    return OversizedNumber(len(text)) if len(text) > MAX_NUMBER_CHARS else int(text)


def _decimal(text: str) -> Decimal | OversizedNumber:
    return OversizedNumber(len(text)) if len(text) > MAX_NUMBER_CHARS else Decimal(text)


def _constant(text: str) -> object:
    raise _Refused("source.malformed_record", "NaN and Infinity are not JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_members, parse_int=_integer, parse_float=_decimal,
                            parse_constant=_constant)


def _depth(line: bytes) -> int:
    deepest = depth = 0
    for bracket in _BRACKET.findall(_STRING.sub(b'""', line)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _unencodable_member(document: dict[str, Any]) -> str | None:
    for key, value in document.items():
        for text in (key, value):
            if isinstance(text, str):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    return key
    return None


def decode(data: bytes | str, number: int) -> Any:
    """One JSON value under the policy above; SourceError (with the 1-based ``number``) otherwise."""
    line = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise SourceError("source.invalid_utf8", "the value is not valid UTF-8", record=number) from None
    # Counting brackets is cheap; the exact depth (strings blanked out) only when it could matter.
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and _depth(line) > MAX_DEPTH:
        raise SourceError("source.nesting_too_deep", f"a value nests deeper than {MAX_DEPTH} levels", record=number)
    try:
        document = _DECODER.decode(text)
    except _Refused as refused:
        evidence: dict[str, str | int] = {"record": number}
        if refused.field is not None:
            evidence["field"] = refused.field
        raise SourceError(refused.code, refused.message, **evidence) from None
    except RecursionError:
        raise SourceError("source.nesting_too_deep", "a value nests too deep to parse", record=number) from None
    except ValueError:  # JSONDecodeError
        raise SourceError("source.malformed_record", "the text is not one JSON value", record=number) from None
    # (A string outside an object, from a database JSON column, is caught where rows are encoded.)
    if isinstance(document, dict) and _SURROGATE_ESCAPE.search(line):
        member = _unencodable_member(document)
        if member is not None:
            raise SourceError("source.invalid_unicode", "a string holds an unpaired surrogate escape",
                              field=member, record=number)
    return document


def parse_line(line: bytes, number: int) -> dict[str, Any]:
    """The record of one non-blank NDJSON line (1-based ``number``); SourceError on anything else."""
    document = decode(line, number)
    if not isinstance(document, dict):
        raise SourceError("source.malformed_record", "each line is one JSON object", record=number)
    return dict(document)
