"""Bounded, duplicate-rejecting YAML loading for every YAML document restproof reads.

PyYAML's ``SafeLoader`` parses the text; this module composes the node graph with bounds on
depth, aliases and node count, walks the graph before anything is constructed and only then
builds plain Python values. Every refusal is a :class:`BoundedYamlError` with a stable code.

Policy (stable, documented in docs/design-contract.md):

* Input is raw bytes, decoded as strict UTF-8. A single leading UTF-8 byte-order mark is
  accepted and dropped (editors add it; it carries no meaning); any other invalid byte sequence,
  including UTF-16/32 input and encoded surrogates, is ``yaml.invalid_utf8``.
* Size is checked on the raw bytes before decoding (``yaml.too_large``); the composed node
  count and the alias-expanded node count are bounded by ``max_nodes`` (also ``yaml.too_large``).
* Collection nesting deeper than ``max_depth`` is ``yaml.too_deep`` (a self-referencing alias
  is reported this way as well); more than ``max_aliases`` alias uses is ``yaml.too_many_aliases``.
* Mapping keys must be plain strings (``yaml.non_string_key``; ``1:``, ``null:``, ``yes:`` and
  complex keys are refused) and unique at every depth, in block and flow style alike
  (``yaml.duplicate_key``).
* The YAML 1.1 merge key ``<<`` is refused (``yaml.unsupported_tag``): merging hides which
  mapping a value came from and lets an override shadow a key silently. Quote it (``"<<"``)
  to use it as an ordinary key.
* Only the JSON-like core types are produced: str, int, float, bool, None, list, dict.
  Any other tag (``!!timestamp``, ``!!binary``, ``!!set``, ``!!python/...``, ``!custom``) is
  ``yaml.unsupported_tag``. Unquoted dates stay strings (no implicit timestamp resolution).
* Anything else PyYAML cannot parse, more than one document, or a scalar that does not match
  its explicit tag is ``yaml.syntax``.

Messages never quote document content beyond a short, identifier-like key name.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections.abc import Callable
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

__all__ = [
    "DEFAULT_MAX_ALIASES",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_NODES",
    "ERROR_CODES",
    "BoundedYamlError",
    "load_bounded_yaml",
    "load_bounded_yaml_file",
]

DEFAULT_MAX_BYTES: Final = 1_000_000
DEFAULT_MAX_DEPTH: Final = 32
DEFAULT_MAX_ALIASES: Final = 16
DEFAULT_MAX_NODES: Final = 200_000

ERROR_CODES: Final = frozenset(
    {
        "yaml.invalid_utf8",
        "yaml.too_large",
        "yaml.too_deep",
        "yaml.too_many_aliases",
        "yaml.duplicate_key",
        "yaml.syntax",
        "yaml.unsupported_tag",
        "yaml.non_string_key",
        "yaml.unreadable",
    }
)

_TAG = "tag:yaml.org,2002:"
_STR_TAG: Final = _TAG + "str"
_MERGE_TAG: Final = _TAG + "merge"
_SCALAR_TAGS: Final = frozenset(_TAG + name for name in ("str", "int", "float", "bool", "null"))
_SEQ_TAG: Final = _TAG + "seq"
_MAP_TAG: Final = _TAG + "map"
_SAFE_KEY = re.compile(r"[A-Za-z0-9_.\-/]{1,40}")
# PyYAML problem texts quote tokens ('<block end>') and single characters; longer quoted text
# may be document content (an anchor name, a scalar) and is masked.
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_HARMLESS_QUOTED = re.compile(r"['\"](<[a-z ]+>|.{0,2})['\"]")


class BoundedYamlError(ValueError):
    """A YAML document was refused. ``code`` is stable; ``message`` carries no document content."""

    def __init__(self, code: str, message: str, location: str | None = None) -> None:
        self.code = code
        self.message = message
        self.location = location
        where = f" (at {location})" if location else ""
        super().__init__(f"{code}: {message}{where}")

    def to_dict(self) -> dict[str, str | None]:
        return {"code": self.code, "message": self.message, "location": self.location}


class _StrictResolver(Resolver):
    """Core-schema resolution without implicit timestamps or the ``=`` value tag."""


_StrictResolver.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_TAG + "timestamp", _TAG + "value")]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}


class _BoundedComposer(Composer):
    """Counts aliases, nesting and nodes while PyYAML composes, before any value exists."""

    _source: str
    _max_depth: int
    _max_aliases: int
    _max_nodes: int
    _depth: int
    _aliases: int
    _nodes: int
    # Provided by yaml.parser.Parser, which precedes this mixin in the loader's MRO.
    check_event: Callable[..., bool]
    peek_event: Callable[[], Any]

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self._nodes += 1
        if self._nodes > self._max_nodes:
            raise BoundedYamlError(
                "yaml.too_large", f"document has more than {self._max_nodes} nodes", self._where()
            )
        if self.check_event(AliasEvent):
            self._aliases += 1
            if self._aliases > self._max_aliases:
                raise BoundedYamlError(
                    "yaml.too_many_aliases",
                    f"document uses more than {self._max_aliases} aliases",
                    self._where(),
                )
            return super().compose_node(parent, index)
        if self.check_event(SequenceStartEvent, MappingStartEvent):
            self._depth += 1
            if self._depth > self._max_depth:
                raise BoundedYamlError(
                    "yaml.too_deep", f"nesting exceeds {self._max_depth} levels", self._where()
                )
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
        return super().compose_node(parent, index)

    def _where(self) -> str:
        event = self.peek_event()
        return _mark_location(self._source, event.start_mark)


class _Bounds:
    def _set_bounds(self, source: str, max_depth: int, max_aliases: int, max_nodes: int) -> None:
        self._source = source
        self._max_depth = max_depth
        self._max_aliases = max_aliases
        self._max_nodes = max_nodes
        self._depth = 0
        self._aliases = 0
        self._nodes = 0


class _PureBoundedLoader(Reader, Scanner, Parser, _BoundedComposer, SafeConstructor, _StrictResolver, _Bounds):
    """Pure-Python PyYAML parsing; used when PyYAML was built without libyaml."""

    def __init__(self, text: str, source: str, max_depth: int, max_aliases: int, max_nodes: int) -> None:
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        _StrictResolver.__init__(self)
        self._set_bounds(source, max_depth, max_aliases, max_nodes)


_LoaderClass: Any = _PureBoundedLoader
if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _CBoundedLoader(_BoundedComposer, CParser, SafeConstructor, _StrictResolver, _Bounds):
        """libyaml scans and parses (about 5x faster); composition, bounds and construction stay in
        Python, because the Python composer placed first in the MRO is the one hooked for bounds."""

        def __init__(self, text: str, source: str, max_depth: int, max_aliases: int, max_nodes: int) -> None:
            CParser.__init__(self, text)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            _StrictResolver.__init__(self)
            self._set_bounds(source, max_depth, max_aliases, max_nodes)

    _LoaderClass = _CBoundedLoader


def _mark_location(source: str, mark: Any) -> str:
    if mark is None:
        return source
    return f"{source}:{mark.line + 1}:{mark.column + 1}"


def _sanitize(problem: str | None) -> str:
    if not problem:
        return "invalid YAML"

    def mask(match: re.Match[str]) -> str:
        text = match.group(0)
        return text if _HARMLESS_QUOTED.fullmatch(text) else "'...'"

    return _QUOTED.sub(mask, problem)[:200]


def _key_label(value: str) -> str:
    return repr(value) if _SAFE_KEY.fullmatch(value) else "<key>"


class _GraphCheck:
    """Walks the composed graph, expanding aliases, so shared nodes count every time they are used."""

    def __init__(self, source: str, max_depth: int, max_nodes: int) -> None:
        self.source = source
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.visited = 0

    def walk(self, node: Node, depth: int) -> None:
        self.visited += 1
        if self.visited > self.max_nodes:
            raise BoundedYamlError(
                "yaml.too_large",
                f"document expands to more than {self.max_nodes} nodes",
                self._loc(node),
            )
        if isinstance(node, ScalarNode):
            if node.tag not in _SCALAR_TAGS:
                raise BoundedYamlError("yaml.unsupported_tag", "unsupported scalar tag", self._loc(node))
            return
        if depth + 1 > self.max_depth:
            raise BoundedYamlError(
                "yaml.too_deep", f"nesting exceeds {self.max_depth} levels", self._loc(node)
            )
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ_TAG:
                raise BoundedYamlError("yaml.unsupported_tag", "unsupported sequence tag", self._loc(node))
            for item in node.value:
                self.walk(item, depth + 1)
            return
        if isinstance(node, MappingNode):
            self._walk_mapping(node, depth)
            return
        raise BoundedYamlError("yaml.syntax", "unexpected node kind", self._loc(node))

    def _walk_mapping(self, node: MappingNode, depth: int) -> None:
        if node.tag != _MAP_TAG:
            raise BoundedYamlError("yaml.unsupported_tag", "unsupported mapping tag", self._loc(node))
        seen: set[str] = set()
        for key, value in node.value:
            if isinstance(key, ScalarNode) and key.tag == _MERGE_TAG:
                raise BoundedYamlError(
                    "yaml.unsupported_tag", "merge key '<<' is not supported", self._loc(key)
                )
            if not isinstance(key, ScalarNode) or key.tag != _STR_TAG:
                raise BoundedYamlError(
                    "yaml.non_string_key", "mapping keys must be strings", self._loc(key)
                )
            if key.value in seen:
                raise BoundedYamlError(
                    "yaml.duplicate_key", f"duplicate key {_key_label(key.value)}", self._loc(key)
                )
            seen.add(key.value)
            self.visited += 1
            self.walk(value, depth + 1)

    def _loc(self, node: Node) -> str:
        return _mark_location(self.source, node.start_mark)


def _decode(data: bytes, source: str) -> str:
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        return data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BoundedYamlError(
            "yaml.invalid_utf8", f"invalid UTF-8 at byte offset {exc.start}", f"{source}:{line}"
        ) from None


def load_bounded_yaml(
    data: bytes,
    *,
    source: str = "<bytes>",
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_aliases: int = DEFAULT_MAX_ALIASES,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Any:
    """Parse one YAML document from raw bytes into plain Python values, within the given bounds.

    An empty document yields ``None``. Raises :class:`BoundedYamlError` on any refusal.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError("load_bounded_yaml expects bytes")
    data = bytes(data)
    if len(data) > max_bytes:
        raise BoundedYamlError("yaml.too_large", f"document exceeds {max_bytes} bytes", source)
    text = _decode(data, source)
    loader = None
    try:
        loader = _LoaderClass(text, source, max_depth, max_aliases, max_nodes)
        node = loader.get_single_node()
        if node is None:
            return None
        _GraphCheck(source, max_depth, max_nodes).walk(node, 0)
        try:
            return loader.construct_document(node)
        except Exception:
            # The graph holds only core tags here, so SafeConstructor can fail only on a scalar that
            # does not fit its explicit tag (``!!int x``, an empty ``!!int``): IndexError, ValueError...
            raise BoundedYamlError("yaml.syntax", "a scalar does not match its tag", source) from None
    except BoundedYamlError:
        raise
    except yaml.reader.ReaderError as exc:
        where = source
        if isinstance(exc.position, int):
            where = f"{source}:{text[: exc.position].count(chr(10)) + 1}"
        raise BoundedYamlError("yaml.syntax", "document contains a non-printable character", where) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = "; ".join(part for part in (exc.context, exc.problem) if part)
        raise BoundedYamlError("yaml.syntax", _sanitize(problem), _mark_location(source, mark)) from None
    except yaml.YAMLError:
        raise BoundedYamlError("yaml.syntax", "invalid YAML", source) from None
    finally:
        if loader is not None:
            loader.dispose()


def _read_regular_file(path: Path, limit: int) -> bytes | None:
    # O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer appears (a
    # ``delivery check`` on a named pipe hung); FIFOs, sockets, block devices and terminals are
    # refused. The type is checked on the opened descriptor,
    # so a file swapped for a FIFO between a stat and the open can not slip through.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        # Character devices other than terminals (/dev/zero) never block and meet the size cap.
        if not (stat.S_ISREG(mode) or (stat.S_ISCHR(mode) and not os.isatty(fd))):
            return None
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            return handle.read(limit)
    finally:
        if fd >= 0:
            os.close(fd)


def load_bounded_yaml_file(
    path: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_aliases: int = DEFAULT_MAX_ALIASES,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Any:
    """Read at most ``max_bytes + 1`` bytes of ``path`` and load them with :func:`load_bounded_yaml`.

    An unreadable file (missing, a directory, no permission) is ``yaml.unreadable``.
    """
    source = str(path)
    try:
        data = _read_regular_file(Path(path), max_bytes + 1)
    except OSError as exc:
        reason = type(exc).__name__
        raise BoundedYamlError("yaml.unreadable", f"cannot read file ({reason})", source) from None
    if data is None:
        raise BoundedYamlError("yaml.unreadable", "not a regular file (FIFO, socket, block device or terminal)",
                               source)
    return load_bounded_yaml(
        data,
        source=source,
        max_bytes=max_bytes,
        max_depth=max_depth,
        max_aliases=max_aliases,
        max_nodes=max_nodes,
    )
