"""Bounded loading of behaviour documents (YAML or JSON), from a file or a request body.

The receiver's own loader, deliberately not shared with the sink (its ground truth must not inherit
a sink bug), with the same kind of bounds: raw size before decoding, strict UTF-8, nesting depth,
alias uses and node count checked while PyYAML composes (before any value is built), mapping keys
plain and unique, only JSON-like scalar types (no implicit YAML timestamps: ``2026-13-45`` stays a
string), integers of at most ``MAX_INT_DIGITS`` digits, finite floats and no lone surrogates.
Every refusal is a :class:`DocumentError` whose message quotes no document content.
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Any, Final

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

try:  # PyYAML built with libyaml (its wheels are); without it, documents are parsed in Python
    from yaml._yaml import CParser

    HAVE_LIBYAML = True
except ImportError:  # pragma: no cover
    HAVE_LIBYAML = False

MAX_BYTES: Final = 262_144
"""Parsing YAML costs about 10-50 microseconds per byte even with libyaml; this bound keeps a replacement
behaviour (parsed off the event loop) to about a second or two of CPU."""
MAX_DEPTH: Final = 32
MAX_ALIASES: Final = 16
MAX_NODES: Final = 100_000
MAX_INT_DIGITS: Final = 30

_CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS: Final = frozenset(_CORE + name for name in ("str", "int", "float", "bool", "null"))


class DocumentError(ValueError):
    """A refused document; the message is safe to print and to put in a problem document."""


class _NoTimestampResolver(Resolver):
    """YAML 1.1 resolution minus implicit timestamps (an invalid date must not crash construction)."""


_NoTimestampResolver.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag not in (_CORE + "timestamp", _CORE + "value")]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}
# A JSON number with an exponent and no dot (``1e5``, ``-2E+3``) is a string in YAML 1.1 but a number
# in JSON and YAML 1.2: resolve it as a float, so a JSON document means what it says (and ``1e400`` is
# then refused as non-finite instead of slipping through as a string).
_NoTimestampResolver.add_implicit_resolver(
    _CORE + "float", re.compile(r"^[-+]?(?:0|[1-9][0-9]*)[eE][-+]?[0-9]+\Z"), list("-+0123456789"))


class _CountingComposer(Composer):
    """Bounds depth, aliases and nodes during composition, so a hostile document stops early."""

    depth = 0
    aliases = 0
    nodes = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise DocumentError(f"the document has more than {MAX_NODES} nodes")
        if self.check_event(AliasEvent):  # type: ignore[attr-defined]
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise DocumentError(f"the document uses more than {MAX_ALIASES} aliases")
            return super().compose_node(parent, index)
        if not self.check_event(SequenceStartEvent, MappingStartEvent):  # type: ignore[attr-defined]
            return super().compose_node(parent, index)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise DocumentError(f"the document nests deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


class _PythonLoader(Reader, Scanner, Parser, _CountingComposer, SafeConstructor, _NoTimestampResolver):
    def __init__(self, text: str) -> None:
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        _NoTimestampResolver.__init__(self)


_Loader: type[Any] = _PythonLoader
if HAVE_LIBYAML:
    class _LibyamlLoader(_CountingComposer, CParser, SafeConstructor, _NoTimestampResolver):  # type: ignore[misc]
        """libyaml reads, scans and parses (its reader refuses control characters as ours does; about three
        times faster); the bounded composer and the checks above stay ours, in Python."""

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            _NoTimestampResolver.__init__(self)

    _Loader = _LibyamlLoader


def _check_graph(node: Node, depth: int, budget: list[int]) -> None:
    """Walk the composed graph with aliases expanded: tags, keys, scalar sizes and the expanded size."""
    budget[0] -= 1
    if budget[0] < 0:
        raise DocumentError(f"the document expands to more than {MAX_NODES} nodes")
    if depth > MAX_DEPTH:
        raise DocumentError(f"the document nests deeper than {MAX_DEPTH} levels")
    if isinstance(node, ScalarNode):
        if node.tag not in _SCALAR_TAGS:
            raise DocumentError("only strings, numbers, booleans and null are allowed (no tags)")
        if node.tag == _CORE + "int" and len(node.value) > MAX_INT_DIGITS:
            raise DocumentError(f"an integer has more than {MAX_INT_DIGITS} digits")
        return
    if isinstance(node, SequenceNode) and node.tag == _CORE + "seq":
        for item in node.value:
            _check_graph(item, depth + 1, budget)
        return
    if not isinstance(node, MappingNode) or node.tag != _CORE + "map":
        raise DocumentError("only mappings and sequences are allowed (no tags)")
    seen: set[str] = set()
    for key, value in node.value:
        if not isinstance(key, ScalarNode) or key.tag != _CORE + "str":
            raise DocumentError("mapping keys must be plain strings (no merge keys)")
        if key.value in seen:
            raise DocumentError(f"duplicate mapping key at line {key.start_mark.line + 1}")
        seen.add(key.value)
        _check_graph(value, depth + 1, budget)


def _check_values(value: Any) -> None:
    """Refuse what would fail later when the document is echoed as JSON or stored: NaN/inf, lone surrogates."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise DocumentError("numbers must be finite")
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise DocumentError("a string holds a lone surrogate (not valid Unicode)") from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def load_document(data: bytes) -> Any:
    """One YAML (or JSON) document from raw bytes, within the bounds above."""
    if len(data) > MAX_BYTES:
        raise DocumentError(f"the document exceeds {MAX_BYTES} bytes")
    try:
        text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as error:
        raise DocumentError(f"the document is not valid UTF-8 (byte {error.start})") from None
    loader = None
    try:
        loader = _Loader(text)  # the reader already refuses non-printable characters here
        node = loader.get_single_node()
        if node is None:
            return None
        _check_graph(node, 0, [MAX_NODES])
        document = loader.construct_document(node)
    except DocumentError:
        raise
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise DocumentError(f"the document is not valid YAML or JSON{where}") from None
    except (yaml.YAMLError, ValueError, TypeError, IndexError, RecursionError):
        raise DocumentError("the document is not valid YAML or JSON") from None
    finally:
        if loader is not None:
            loader.dispose()
    _check_values(document)
    return document


def read_regular_file(path: Path, limit: int = MAX_BYTES) -> bytes:
    """At most ``limit + 1`` bytes of a regular file; a FIFO, device or directory is refused without
    blocking (opened non-blocking, checked with fstat before any read)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise DocumentError(f"cannot read {path}: {error.strerror or error.__class__.__name__}") from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise DocumentError(f"{path} is not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(descriptor, min(65_536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError as error:
        raise DocumentError(f"cannot read {path}: {error.strerror or error.__class__.__name__}") from None
    finally:
        os.close(descriptor)
