"""Bounded YAML loader: every stable refusal code, bounds, and no content leaking into messages."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sink.bounded_yaml as bounded
from sink.bounded_yaml import ERROR_CODES, BoundedYamlError, load_bounded_yaml, load_bounded_yaml_file

SENTINEL = "s3cr3t-sentinel-value-7f1c"
PARSERS = ["pure-python", "libyaml"] if yaml.__with_libyaml__ else ["pure-python"]


@pytest.fixture(autouse=True, params=PARSERS)
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every loader test runs with both parser back ends: the refusal contract must not depend on it."""
    if request.param == "pure-python":
        monkeypatch.setattr(bounded, "_LoaderClass", bounded._PureBoundedLoader)
    return str(request.param)


def _refusal(data: bytes, **bounds: int) -> BoundedYamlError:
    with pytest.raises(BoundedYamlError) as caught:
        load_bounded_yaml(data, source="doc.yaml", **bounds)
    assert caught.value.code in ERROR_CODES
    return caught.value


def test_plain_document_loads_to_core_types() -> None:
    data = b"name: x\ncount: 3\nratio: 0.5\nflag: true\nnothing: null\nday: 2026-08-30\nitems: [1, {a: b}]\n"
    assert load_bounded_yaml(data) == {
        "name": "x",
        "count": 3,
        "ratio": 0.5,
        "flag": True,
        "nothing": None,
        "day": "2026-08-30",  # no implicit timestamp: dates stay strings
        "items": [1, {"a": "b"}],
    }


def test_empty_document_is_none() -> None:
    assert load_bounded_yaml(b"") is None


def test_leading_utf8_bom_is_accepted_and_dropped() -> None:
    assert load_bounded_yaml(b"\xef\xbb\xbfkey: \xd0\x9c\xd0\xb8\xd1\x80\n") == {"key": "Мир"}


@pytest.mark.parametrize(
    "data",
    [
        b"key: \xff\n",  # invalid start byte
        b"key: \xc3\n",  # truncated sequence
        b"key: \xed\xa0\x80\n",  # encoded surrogate
        "key: value\n".encode("utf-16"),  # UTF-16 with its BOM is not UTF-8
        b"\xef\xbb\xbf\xef\xbb\xbf\xfe\n",  # only one BOM is dropped; the rest must decode
    ],
)
def test_invalid_utf8_is_refused(data: bytes) -> None:
    error = _refusal(data)
    assert error.code == "yaml.invalid_utf8"
    assert error.location is not None and error.location.startswith("doc.yaml")


def test_too_large_is_checked_on_raw_bytes() -> None:
    assert _refusal(b"a: " + b"x" * 100, max_bytes=50).code == "yaml.too_large"
    assert load_bounded_yaml(b"a: " + b"x" * 47, max_bytes=50) == {"a": "x" * 47}


def test_node_count_bound() -> None:
    data = b"[" + b",".join(b"1" for _ in range(200)) + b"]"
    assert _refusal(data, max_nodes=100).code == "yaml.too_large"
    assert len(load_bounded_yaml(data, max_nodes=1000)) == 200


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 40 + b"]" * 40,
        b"".join(b"  " * level + b"k:\n" for level in range(40)) + b"  " * 40 + b"v\n",
        b"&a [*a]\n",  # a self-referencing alias expands forever
    ],
)
def test_too_deep(data: bytes) -> None:
    assert _refusal(data).code == "yaml.too_deep"


def test_depth_bound_is_exact() -> None:
    assert load_bounded_yaml(b"[" * 3 + b"]" * 3, max_depth=3) == [[[]]]
    assert _refusal(b"[" * 4 + b"]" * 4, max_depth=3).code == "yaml.too_deep"


def test_alias_bomb_is_refused() -> None:
    lines = [b"l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 10):
        refs = b", ".join(b"*l%d" % (level - 1) for _ in range(10))
        lines.append(b"l%d: &l%d [%s]" % (level, level, refs))
    assert _refusal(b"\n".join(lines) + b"\n").code == "yaml.too_many_aliases"


def test_alias_expansion_is_bounded_even_within_the_alias_budget() -> None:
    # 16 aliases, each of a 2000-element list: 32000 expanded nodes > max_nodes.
    big = b"[" + b",".join(b"1" for _ in range(2000)) + b"]"
    data = b"base: &b " + big + b"\nuses: [" + b", ".join(b"*b" for _ in range(16)) + b"]\n"
    assert _refusal(data, max_nodes=10_000).code == "yaml.too_large"
    assert len(load_bounded_yaml(data)["uses"]) == 16


def test_few_aliases_are_allowed() -> None:
    assert load_bounded_yaml(b"a: &x {k: 1}\nb: *x\n") == {"a": {"k": 1}, "b": {"k": 1}}


@pytest.mark.parametrize(
    ("data", "location"),
    [
        (b"a: 1\na: 2\n", "doc.yaml:2:1"),
        (b"top:\n  mid:\n    deep:\n      k: 1\n      k: 2\n", "doc.yaml:5:7"),
        (b"a: {x: 1, y: 2, x: 3}\n", "doc.yaml:1:17"),
        (b"list:\n- {k: 1}\n- {k: 1, k: 2}\n", "doc.yaml:3:10"),
        (b"a: 1\n'a': 2\n", "doc.yaml:2:1"),  # quoting does not make a different key
        (b'? a\n: 1\n"a": 2\n', "doc.yaml:3:1"),
    ],
)
def test_duplicate_keys_at_any_depth(data: bytes, location: str) -> None:
    error = _refusal(data)
    assert error.code == "yaml.duplicate_key"
    assert error.location == location


def test_merge_key_is_refused_but_a_quoted_one_is_a_plain_key() -> None:
    assert _refusal(b"base: &b {x: 1}\nother:\n  <<: *b\n  x: 2\n").code == "yaml.unsupported_tag"
    assert _refusal(b"a: {<<: {x: 1}}\n").code == "yaml.unsupported_tag"
    assert load_bounded_yaml(b'"<<": 1\n') == {"<<": 1}


@pytest.mark.parametrize(
    "data",
    [
        b"a: !!python/object/apply:os.system [echo]\n",
        b"a: !!python/name:os.system\n",
        b"a: !!timestamp 2026-08-30\n",
        b"a: !!binary aGVsbG8=\n",
        b"a: !!set {x, y}\n",
        b"a: !!omap [{x: 1}]\n",
        b"a: !custom value\n",
    ],
)
def test_unsupported_tags(data: bytes) -> None:
    assert _refusal(data).code == "yaml.unsupported_tag"


def test_explicit_core_tags_are_allowed() -> None:
    assert load_bounded_yaml(b'a: !!str 12\nb: !!int "7"\nc: !!float 1\n') == {"a": "12", "b": 7, "c": 1.0}


@pytest.mark.parametrize("data", [b"1: a\n", b"null: a\n", b"yes: a\n", b"? [a, b]\n: c\n", b"? {a: b}\n: c\n"])
def test_non_string_keys(data: bytes) -> None:
    assert _refusal(data).code == "yaml.non_string_key"


@pytest.mark.parametrize(
    "data",
    [
        b"a: [1, 2\n",
        b"a: b: c\n",
        b"a:\n\t- x\n",
        b"a: *undefined\n",
        b"a: 1\n---\nb: 2\n",
        b"a: \x00\n",
        b"a: !!int twelve\n",
        b"a: !!bool maybe\n",
        b"a: !!int\n",  # empty scalar: SafeConstructor raises IndexError, still a stable refusal
        b"a: !!float ''\n",
    ],
)
def test_syntax_errors(data: bytes) -> None:
    assert _refusal(data).code == "yaml.syntax"


@pytest.mark.parametrize(
    "template",
    [
        "token: [{value}\n",
        "a: *{value}\n",
        "a: !!int {value}\n",
        "a: !{value} x\n",
        "'{value} {value}': 1\n'{value} {value}': 2\n",
    ],
)
def test_messages_never_quote_document_content(template: str) -> None:
    error = _refusal(template.format(value=SENTINEL).encode())
    assert SENTINEL not in str(error)
    assert SENTINEL not in error.message


def test_duplicate_key_names_only_short_identifier_like_keys() -> None:
    assert _refusal(b"short_key: 1\nshort_key: 2\n").message == "duplicate key 'short_key'"
    assert _refusal(b"'Bearer abc': 1\n'Bearer abc': 2\n").message == "duplicate key <key>"
    long_key = b"k" * 41
    assert _refusal(long_key + b": 1\n" + long_key + b": 2\n").message == "duplicate key <key>"


def test_file_loader_reads_with_a_cap(tmp_path: Path) -> None:
    target = tmp_path / "doc.yaml"
    target.write_bytes(b"a: 1\n" + b"#" * 5000 + b"\n")
    with pytest.raises(BoundedYamlError) as caught:
        load_bounded_yaml_file(target, max_bytes=100)
    assert caught.value.code == "yaml.too_large"
    assert load_bounded_yaml_file(target, max_bytes=10_000) == {"a": 1}


def test_file_loader_reports_unreadable_paths(tmp_path: Path) -> None:
    for target in (tmp_path / "missing.yaml", tmp_path):
        with pytest.raises(BoundedYamlError) as caught:
            load_bounded_yaml_file(target)
        assert caught.value.code == "yaml.unreadable"
        assert caught.value.location == str(target)


def test_error_is_a_value_error_with_stable_fields() -> None:
    error = _refusal(b"a: 1\na: 2\n")
    assert isinstance(error, ValueError)
    assert error.to_dict() == {"code": "yaml.duplicate_key", "message": "duplicate key 'a'",
                               "location": "doc.yaml:2:1"}


@pytest.mark.timeout(10)
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero to prove the read cap")
def test_file_loader_never_reads_past_the_cap() -> None:
    # An endless file: an uncapped read would never return.
    with pytest.raises(BoundedYamlError) as caught:
        load_bounded_yaml_file(Path("/dev/zero"), max_bytes=4096)
    assert caught.value.code == "yaml.too_large"


def test_libyaml_is_the_default_back_end_when_built(parser: str) -> None:
    expected = "_CBoundedLoader" if parser == "libyaml" else "_PureBoundedLoader"
    assert bounded._LoaderClass.__name__ == expected


_YAML_PIECES = st.sampled_from(
    ["a", "b", ":", " ", "\n", "  ", "-", "[", "]", "{", "}", ",", "&x", "*x", "!!int", "!t", "<<", "'", '"',
     "?", "#", "---", "...", "\t", "1", "null", "yes", "\u00e9", "|", ">", "%YAML 1.1", "\x00", "\ufeff"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=200), st.lists(_YAML_PIECES, max_size=40).map(lambda p: "".join(p).encode())))
def test_any_input_loads_or_raises_only_bounded_yaml_error(data: bytes) -> None:
    try:
        value = load_bounded_yaml(data, max_depth=8, max_aliases=4, max_nodes=500)
    except BoundedYamlError as error:
        assert error.code in ERROR_CODES
        return
    assert _plain(value)


def _plain(value: object) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    return value is None or isinstance(value, str | int | float | bool)
