"""Every anchored validation pattern ends at the end of the string.

In Python's ``re``, ``$`` also matches before a trailing newline, so ``re.compile(r"^id$").match``
accepts ``"id\\n"``: an identifier, a header value, a journal instant or a source integer with a
newline after it. The project's patterns end with ``\\Z``; this test reads every module's source
(statically: importing them all would start the load generator's monkey-patching) and refuses a
``re.compile`` of a ``^…$`` pattern without ``re.MULTILINE``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from sink.contracts.transport import _HEADER_VALUE
from sink.journal.ids import require_ident, require_utc_instant

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("sink", "certification", "mock_receiver", "fault_proxy")


def _is_re_compile(call: ast.Call) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr == "compile" and isinstance(func.value, ast.Name) \
        and func.value.id == "re"


def _multiline(call: ast.Call) -> bool:
    return any("MULTILINE" in ast.unparse(arg) or "re.M" in ast.unparse(arg)
               for arg in [*call.args[1:], *(k.value for k in call.keywords)])


def dollar_anchored(source: str, name: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and _is_re_compile(node) and node.args):
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            pattern = first.value
            if pattern.startswith("^") and pattern.endswith("$") and not pattern.endswith("\\$") \
                    and not _multiline(node):
                found.append(f"{name}:{node.lineno}: {pattern}")
    return found


def test_the_reader_finds_a_dollar_anchored_pattern() -> None:
    assert dollar_anchored('import re\nX = re.compile(r"^[a-z]+$")\n', "m") == ["m:2: ^[a-z]+$"]
    assert dollar_anchored('import re\nX = re.compile(r"^[a-z]+\\Z")\n', "m") == []
    assert dollar_anchored('import re\nX = re.compile(r"^a$", re.MULTILINE)\n', "m") == []


def test_no_pattern_lets_a_trailing_newline_through() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            found.extend(dollar_anchored(path.read_text(encoding="utf-8"), str(path.relative_to(REPO))))
    assert found == []


@pytest.mark.parametrize("check", [
    lambda: require_ident("operation-1\n", "id"),
    lambda: require_utc_instant("2026-01-01T00:00:00Z\n", "t"),
])
def test_a_trailing_newline_is_refused(check: Callable[[], None]) -> None:
    with pytest.raises(ValueError):
        check()


def test_header_value_with_a_trailing_newline_does_not_match() -> None:
    assert _HEADER_VALUE.match("application/json") is not None
    assert _HEADER_VALUE.match("application/json\n") is None
