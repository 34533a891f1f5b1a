"""Property: however a bundled document is corrupted, compilation either succeeds or raises a
CompileError whose codes are catalogued — never another exception, never an echoed secret."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cp_helpers import ASYNC_PROFILE, ASYNC_WORKLOAD, LOCAL_BINDING, SCENARIOS, SENTINEL, scenario_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sink.bounded_yaml import load_bounded_yaml_file
from sink.compiler import CONTRACT_CODES, CompileError, compile_files, default_paths

pytestmark = pytest.mark.timeout(240)

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=40), st.sampled_from([SENTINEL, "../x", "https://evil.example/", "{unknown}", "DELETE",
                                           "{{x}}", "\u0000", "env://TOKEN", "sha256:" + "0" * 64]),
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=12), inner, max_size=3)), max_leaves=6)


def _paths(document: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    yield prefix
    if isinstance(document, dict):
        for key, value in document.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from _paths(value, (*prefix, index))


def _replace(document: Any, path: tuple[str | int, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(document, dict):
        return {**document, head: _replace(document[head], rest, value)}
    copy = list(document)
    copy[int(head)] = _replace(copy[int(head)], rest, value)
    return copy


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as directory:
        yield scenario_tree(Path(directory))


@pytest.mark.parametrize("relative", [ASYNC_PROFILE, LOCAL_BINDING, ASYNC_WORKLOAD])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_corrupted_documents_fail_only_with_catalogued_codes(tree: Path, relative: str, data: st.DataObject) -> None:
    original = load_bounded_yaml_file(SCENARIOS / relative)
    paths = list(_paths(original))
    path = data.draw(st.sampled_from(paths), label="path")
    value = data.draw(_VALUES, label="value")
    (tree / relative).write_text(json.dumps(_replace(original, path, value)), encoding="utf-8")
    try:
        compile_files(default_paths(tree / ASYNC_WORKLOAD))
    except CompileError as exc:
        assert all(code in CONTRACT_CODES or code.startswith("yaml.") for code in exc.codes), exc.codes
        assert all(SENTINEL not in diagnostic.message for diagnostic in exc.diagnostics)
    finally:
        shutil.copyfile(SCENARIOS / relative, tree / relative)
