"""The harness's own bounded YAML/JSON reader: what a hostile file needs bounded, each refusal a
DocumentError naming the file and the problem, never the document's content."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import pytest

from certification.documents import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NODES,
    DocumentError,
    load_yaml,
    load_yaml_bytes,
    loads_json,
    read_bytes,
)

SENTINEL = "sentinel-secret-9c1e"


def test_plain_yaml_is_read() -> None:
    assert load_yaml_bytes(b"a: 1\nb: [x, 2.5, true, null]\n", "doc") == {"a": 1, "b": ["x", 2.5, True, None]}


def test_dates_stay_strings() -> None:
    document = load_yaml_bytes(b"good: 2026-03-01\nbad: 2026-13-45\nstamp: 2026-03-01T08:00:00Z\n", "doc")
    assert document == {"good": "2026-03-01", "bad": "2026-13-45", "stamp": "2026-03-01T08:00:00Z"}


def test_a_byte_order_mark_is_allowed() -> None:
    assert load_yaml_bytes("\ufeffa: 1\n".encode(), "doc") == {"a": 1}


@pytest.mark.parametrize(("data", "problem"), [
    (b"a: 1\na: 2\n", "doc: duplicate key 'a'"),
    (b"outer:\n  k: 1\n  k: 2\n", "doc: duplicate key 'k'"),
    (b"base: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\n", "doc: merge keys (<<) are not accepted"),
    (b"1: a\n", "doc: mapping keys must be strings"),
    (b"? [a, b]\n: 1\n", "doc: mapping keys must be strings"),
    (b"", "doc: empty document"),
    (b"a: 1\n\x00", "doc: holds a NUL character"),
    (b"a: \xff\n", "doc: not UTF-8"),
    (b"a: [1\n", "doc: not valid YAML (ParserError)"),
    (b"a: 1\n---\nb: 2\n", "doc: not valid YAML (ComposerError)"),
    (b"a: !!python/object:os.system x\n", "doc: not valid YAML (ConstructorError)"),
])
def test_refusals(data: bytes, problem: str) -> None:
    with pytest.raises(DocumentError) as raised:
        load_yaml_bytes(data, "doc")
    assert str(raised.value) == problem


def test_nesting_is_bounded() -> None:
    at_limit = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH  # the outermost sequence is level 1
    assert load_yaml_bytes(at_limit, "doc") is not None
    with pytest.raises(DocumentError, match=f"doc: nested deeper than {MAX_DEPTH} levels"):
        load_yaml_bytes(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "doc")
    with pytest.raises(DocumentError, match=f"doc: nested deeper than {MAX_DEPTH} levels"):
        load_yaml_bytes(b"a:\n" + b"".join(b"  " * i + b"k:\n" for i in range(1, MAX_DEPTH + 1)), "doc")
    with pytest.raises(DocumentError, match="doc: "):
        load_yaml_bytes(b"[" * 1_000, "doc")  # too deep for the composer itself (RecursionError): still a refusal


def test_an_alias_bomb_is_refused_before_construction() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    with pytest.raises(DocumentError, match=f"more than {MAX_NODES} nodes"):
        load_yaml_bytes("\n".join(lines).encode(), "doc")


def test_a_few_aliases_are_fine() -> None:
    assert load_yaml_bytes(b"a: &x [1, 2]\nb: *x\n", "doc") == {"a": [1, 2], "b": [1, 2]}


def test_refusals_never_quote_the_content() -> None:
    for data in (f"{SENTINEL}: 1\n{SENTINEL}: 2\n".encode(), f"a: [{SENTINEL}\n".encode(),
                 f"{SENTINEL}: 1\n\x00".encode()):
        with pytest.raises(DocumentError) as raised:
            load_yaml_bytes(data, "doc")
        assert SENTINEL not in str(raised.value) or "duplicate key" in str(raised.value)


# --- files ------------------------------------------------------------------------------------------------


def test_a_file_is_read_with_its_name_in_every_refusal(tmp_path: Path) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text("a: 1\n")
    assert load_yaml(path) == {"a": 1}
    path.write_text("a: 1\na: 2\n")
    with pytest.raises(DocumentError, match=f"^{re.escape(str(path))}: duplicate key 'a'$"):
        load_yaml(path)


def test_size_is_checked_on_the_file_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as handle:
        handle.truncate(MAX_BYTES + 1)
    with pytest.raises(DocumentError, match=f"big.yaml: larger than {MAX_BYTES} bytes"):
        load_yaml(path)
    path.write_bytes(b"a: 1\n" + b"#" * 100)
    with pytest.raises(DocumentError, match="larger than 10 bytes"):
        read_bytes(path, limit=10)
    assert read_bytes(path, limit=105) == b"a: 1\n" + b"#" * 100


def test_missing_files_and_directories_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match=r"nope.yaml: cannot be read \(No such file or directory\)"):
        load_yaml(tmp_path / "nope.yaml")
    with pytest.raises(DocumentError, match="not a regular file"):
        load_yaml(tmp_path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(DocumentError, match=r"fifo\.yaml: not a regular file"):
        load_yaml(fifo)


def test_a_socket_and_a_device_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="not a regular file"):
        read_bytes(Path("/dev/null"))
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tmp_path / "s.yaml"))
        with pytest.raises(DocumentError, match=r"s\.yaml: cannot be read"):
            load_yaml(tmp_path / "s.yaml")  # open(2) refuses a socket: ENXIO
    finally:
        server.close()


def test_a_symlink_to_a_regular_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "real.yaml").write_text("a: 1\n")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real.yaml")
    assert load_yaml(tmp_path / "link.yaml") == {"a": 1}


# --- strict JSON ------------------------------------------------------------------------------------------


def test_json_is_read() -> None:
    assert loads_json('{"a": [1, 2.5, "x", null, true]}', "r") == {"a": [1, 2.5, "x", None, True]}
    assert loads_json(b'{"a": 1}', "r") == {"a": 1}


@pytest.mark.parametrize(("text", "problem"), [
    ('{"a": 1, "a": 2}', "r: duplicate member 'a'"),
    ('{"o": {"k": 1, "k": 1}}', "r: duplicate member 'k'"),
    ('{"a": NaN}', "r: NaN is not JSON"),
    ('{"a": Infinity}', "r: Infinity is not JSON"),
    ('{"a": -Infinity}', "r: -Infinity is not JSON"),
    ('{"a": 1e999}', "r: a non-finite number"),
    ('{"a": 1', "r: not valid JSON (JSONDecodeError)"),
    ("[" * 100_000 + "]" * 100_000, "r: not valid JSON (RecursionError)"),
    (b'{"a": "\xff"}', "r: not valid JSON (UnicodeDecodeError)"),
    ("", "r: not valid JSON (JSONDecodeError)"),
])
def test_json_refusals(text: str | bytes, problem: str) -> None:
    with pytest.raises(DocumentError) as raised:
        loads_json(text, "r")
    assert str(raised.value) == problem


def test_json_strings_with_nul_are_data() -> None:
    assert loads_json('{"a": "x\\u0000y"}', "r") == {"a": "x\x00y"}
