"""One strict JSON reader for every JSON document the receiver accepts (data rows, admin bodies).

Python's ``json`` module is lenient where a ground-truth recorder must not be: a repeated member name
silently keeps the last value (``{"id": "a", "id": "b"}``), numbers too large for a float become
``inf`` (``1e400`` and ``1e999`` would then be the same value with the same digest), and the
non-standard constants ``NaN``/``Infinity`` are accepted. Each of these is refused here with its own
stable slug; nothing of the document is quoted in the refusal.
"""

from __future__ import annotations

import json
import math

from mock_receiver.problems import ProblemError, bad_request


def _unique_members(pairs: list[tuple[str, object]]) -> dict[str, object]:
    document = dict(pairs)
    if len(document) != len(pairs):
        raise bad_request("duplicate_member", "a JSON object repeats a member name")
    return document


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise bad_request("non_finite_number", "a JSON number is too large to be a finite number")
    return value


def _no_constant(_: str) -> object:
    raise bad_request("malformed_json", "NaN and Infinity are not JSON")


def loads(text: str) -> object:
    """Parse ``text`` strictly; a refusal is a 400 :class:`ProblemError` (``duplicate_member``,
    ``non_finite_number``, ``json_too_deep`` or ``malformed_json``)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_members, parse_float=_finite,
                          parse_constant=_no_constant)
    except ProblemError:
        raise
    except RecursionError:
        raise bad_request("json_too_deep", "JSON nesting is too deep") from None
    except ValueError:
        raise bad_request("malformed_json", "the body is not valid JSON") from None


def loads_bytes(data: bytes) -> object:
    """:func:`loads` over UTF-8 bytes (``invalid_utf8`` otherwise)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise bad_request("invalid_utf8", "the body is not valid UTF-8") from None
    return loads(text)
