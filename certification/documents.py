"""The harness's own bounded reader of the YAML and JSON documents it is handed.

Catalogs, sink files, workloads, mappings and receiver behaviours are read here, not with the
sink's loader: the judge must not inherit a bug of the code it judges. PyYAML's safe loader does
the parsing; this module adds what a hostile file needs bounded: a size limit checked before
reading, one document, no duplicate mapping key, no alias bombs, a nesting limit, and dates left
as strings (a catalog's ``2026-13-45`` is a string the schema then refuses, never a crash).

Every refusal is a ``DocumentError`` whose message names the file and the problem, never the
document's content.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 1_000_000
MAX_DEPTH = 64
MAX_NODES = 200_000


class DocumentError(ValueError):
    """A document the harness refuses to read (invalid input: exit 2)."""


class _Loader(yaml.SafeLoader):
    """SafeLoader without timestamp resolution (dates stay strings) and without merge keys."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    keys: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            raise DocumentError("merge keys (<<) are not accepted")
        key = loader.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
        if not isinstance(key, str):
            raise DocumentError("mapping keys must be strings")
        if key in keys:
            raise DocumentError(f"duplicate key {key!r}")
        keys.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)  # type: ignore[arg-type]


def _bounded_tree(node: yaml.Node) -> None:
    """Refuse deep or huge node graphs before construction (aliases counted at every use)."""
    stack: list[tuple[yaml.Node, int]] = [(node, 1)]
    seen = 0
    while stack:
        current, depth = stack.pop()
        seen += 1
        if depth > MAX_DEPTH:
            raise DocumentError(f"nested deeper than {MAX_DEPTH} levels")
        if seen > MAX_NODES:
            raise DocumentError(f"more than {MAX_NODES} nodes (aliases expanded)")
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in current.value)


def read_bytes(path: Path, *, limit: int = MAX_BYTES) -> bytes:
    """A regular file's bytes, at most ``limit`` (checked on the file, before reading)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise DocumentError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise DocumentError(f"{path}: not a regular file")
        if info.st_size > limit:
            raise DocumentError(f"{path}: larger than {limit} bytes")
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise DocumentError(f"{path}: larger than {limit} bytes")
    return data


def load_yaml_bytes(data: bytes, where: str) -> Any:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DocumentError(f"{where}: not UTF-8") from None
    if "\x00" in text:
        raise DocumentError(f"{where}: holds a NUL character")
    try:
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                raise DocumentError("empty document")  # named with ``where`` below, like every refusal
            _bounded_tree(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()  # type: ignore[no-untyped-call]
    except DocumentError as exc:
        raise DocumentError(f"{where}: {exc}") from None
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
        raise DocumentError(f"{where}: not valid YAML ({type(exc).__name__})") from None


def load_yaml(path: Path, *, limit: int = MAX_BYTES) -> Any:
    return load_yaml_bytes(read_bytes(path, limit=limit), str(path))


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DocumentError(f"duplicate member {key!r}")
        result[key] = value
    return result


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise DocumentError("a non-finite number")
    return value


def _refuse_constant(name: str) -> Any:
    raise DocumentError(f"{name} is not JSON")


def loads_json(text: str | bytes, where: str) -> Any:
    """Strict JSON: duplicate members, NaN/Infinity and numbers that overflow to inf are refused."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_float=_finite,
                          parse_constant=_refuse_constant)
    except DocumentError as exc:
        raise DocumentError(f"{where}: {exc}") from None
    except (ValueError, RecursionError, TypeError) as exc:
        raise DocumentError(f"{where}: not valid JSON ({type(exc).__name__})") from None
