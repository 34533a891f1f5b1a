"""One strict JSON reading for every control body (HTTP-phase control API, Toxiproxy-compatible API).

Python's ``json.loads`` is lenient where the harness must not be:

- a member name given twice keeps the last value silently (``{"id": "a", "id": "b"}`` is rule
  ``b``, while a reader that keeps the first sees rule ``a``): refused;
- ``NaN``, ``Infinity`` and numbers too large for a double (``1e400`` and ``1e999`` both become
  ``inf``, so two different inputs read the same): refused, only finite numbers are JSON numbers
  here (RFC 8259 has no non-finite ones);
- very deep nesting raises ``RecursionError`` inside the parser, and deep values would make every
  later walk over them recursive too: at most ``MAX_JSON_DEPTH`` levels.

Errors name the problem, never the submitted text (it may be megabytes long or hold secrets).
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_JSON_DEPTH = 32


class JsonRefused(ValueError):
    """The body is not strict JSON; ``str()`` is a message that carries none of the input."""


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, value in pairs:
        if name in result:
            raise JsonRefused("JSON object has a duplicate member name")
        result[name] = value
    return result


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonRefused("JSON number out of range (not a finite double)")
    return value


def _no_constant(_: str) -> Any:
    raise JsonRefused("NaN and Infinity are not JSON numbers")


def json_depth(value: object) -> int:
    """Nesting depth of a parsed JSON value, computed without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def loads_strict(raw: bytes | str) -> Any:
    """Parse ``raw`` as strict, bounded JSON, or raise ``JsonRefused``."""
    try:
        value = json.loads(raw, object_pairs_hook=_object_without_duplicates, parse_float=_finite_float,
                           parse_constant=_no_constant)
    except JsonRefused:
        raise
    except RecursionError:
        raise JsonRefused(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError):
        raise JsonRefused("body is not valid JSON") from None
    if json_depth(value) > MAX_JSON_DEPTH:
        raise JsonRefused(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value
