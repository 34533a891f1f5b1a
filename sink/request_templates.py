"""Render a profile's typed request fields into a path, a query and semantic headers.

Only the finite symbol set of ``sink.contracts.symbols`` is substituted (the templates were
validated when the profile was compiled and are validated again here). Values are data, so they
are encoded, never trusted: RFC 3986 percent-encoding of everything outside the unreserved set
in path segments and query values; header and multipart scalar values must already be visible
ASCII (they cannot be encoded without changing meaning) and are refused otherwise. A value can
not add a path segment, a query parameter, a header, a scheme or an authority.

The fence's own field (the header or query parameter its ``location`` names) carries the key in the
fence's ``encoding`` (``sink.fence_encoding``); every other field carries symbol values as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from urllib.parse import quote

from sink.contracts.profile import MutationFence
from sink.contracts.profile_ack import PollSpec
from sink.contracts.profile_request import MultipartFileBody, PayloadPart, RequestSpec
from sink.contracts.symbols import TemplateLocation, template_symbols
from sink.fence_encoding import FenceEncodingError, encode_fence_value

# The same placeholder grammar as sink.contracts.symbols (whose pattern is private there).
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_VISIBLE = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?\Z")
_FILENAME_VALUE = re.compile(r"^[A-Za-z0-9._:~-]{1,200}\Z")
MAX_VALUE_LENGTH = 1024


class RenderError(ValueError):
    """Stable ``code``; the message never repeats the value (it is data, and may be sensitive)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


@dataclass(frozen=True, slots=True)
class RequestSymbols:
    resource: str
    delivery_key: str
    receiver_mutation_key: str
    scope_from: date
    scope_to: date

    def value(self, symbol: str) -> str:
        values = {
            "resource": self.resource,
            "delivery_key": self.delivery_key,
            "receiver_mutation_key": self.receiver_mutation_key,
            "scope.from": self.scope_from.isoformat(),
            "scope.to": self.scope_to.isoformat(),
        }
        if symbol not in values:
            raise RenderError("render.bad_symbol", "not a request symbol")
        return values[symbol]


def _substitute(template: str, location: TemplateLocation, lookup: Mapping[str, str], encode: bool) -> str:
    try:
        template_symbols(template, location)
    except Exception:
        raise RenderError("render.bad_template", f"the {location.value} template is not valid") from None

    def replace(match: re.Match[str]) -> str:
        symbol = match.group(1)
        if symbol not in lookup:
            raise RenderError("render.missing_value", f"no value for a {location.value} placeholder")
        value = lookup[symbol]
        if len(value) > MAX_VALUE_LENGTH:
            raise RenderError("render.value_too_long", f"a {location.value} value is too long")
        if encode:
            return quote(value, safe="")
        if not _VISIBLE.fullmatch(value):
            raise RenderError("render.invalid_value", f"a {location.value} value is not visible ASCII")
        return value

    return _PLACEHOLDER.sub(replace, template)


def _path(template: str, location: TemplateLocation, lookup: Mapping[str, str]) -> str:
    for symbol in _PLACEHOLDER.findall(template):
        value = lookup.get(symbol)
        if value is not None and value in ("", ".", ".."):
            # Encoding leaves these as they are: an empty or dot segment would change the path.
            raise RenderError("render.path_traversal", "a path value may not be empty, '.' or '..'")
    return _substitute(template, location, lookup, encode=True)


def _request_lookup(symbols: RequestSymbols, template: str) -> dict[str, str]:
    return {symbol: symbols.value(symbol) for symbol in _PLACEHOLDER.findall(template)}


def _field_lookup(symbols: RequestSymbols, template: str, fence: MutationFence | None,
                  location: TemplateLocation, name: str) -> dict[str, str]:
    """The template's symbol values; the fence's own field gets its key in the fence's encoding."""
    lookup = _request_lookup(symbols, template)
    if fence is None or fence.encoding == "raw" or not _is_fence_field(fence, location, name):
        return lookup
    placeholder = "{" + str(fence.value_from) + "}"
    if template != placeholder:  # compile-time rule, checked again: the field is the key and nothing else
        raise RenderError("render.bad_template", f"the fence {location.value} is not exactly its placeholder")
    try:
        return {str(fence.value_from): encode_fence_value(lookup[str(fence.value_from)], fence.encoding)}
    except FenceEncodingError:
        raise RenderError("render.invalid_value", f"the fence {location.value} value cannot be encoded as "
                          f"{fence.encoding}") from None


def _is_fence_field(fence: MutationFence, location: TemplateLocation, name: str) -> bool:
    if location is TemplateLocation.QUERY:
        return fence.location == "query" and name == fence.query_parameter
    return fence.location == "header" and fence.header_name is not None and name.lower() == fence.header_name.lower()


def render_path_and_query(spec: RequestSpec, symbols: RequestSymbols, fence: MutationFence | None = None) -> str:
    """``/path?name=value&…`` in the profile's declared query order."""
    path = _path(spec.path, TemplateLocation.PATH, _request_lookup(symbols, spec.path))
    pairs = []
    for name, template in spec.query.items():
        lookup = _field_lookup(symbols, template, fence, TemplateLocation.QUERY, name)
        value = _substitute(template, TemplateLocation.QUERY, lookup, encode=True)
        pairs.append(f"{quote(name, safe='')}={value}")
    return path + ("?" + "&".join(pairs) if pairs else "")


def render_semantic_headers(spec: RequestSpec, symbols: RequestSymbols,
                            fence: MutationFence | None = None) -> tuple[tuple[str, str], ...]:
    return tuple(
        (name.lower(), _substitute(template, TemplateLocation.HEADER,
                                   _field_lookup(symbols, template, fence, TemplateLocation.HEADER, name),
                                   encode=False))
        for name, template in spec.headers.items()
    )


def render_scalar_parts(body: MultipartFileBody, symbols: RequestSymbols) -> tuple[tuple[str, str], ...]:
    """The multipart scalar parts, in declared order (the sealer frames them into the body)."""
    parts = []
    for name, part in body.scalar_parts.items():
        value = symbols.value(part.value_from) if part.value_from is not None else str(part.value)
        if not _VISIBLE.fullmatch(value) or len(value) > MAX_VALUE_LENGTH:
            raise RenderError("render.invalid_value", "a scalar part value is not bounded visible ASCII")
        parts.append((name, value))
    return tuple(parts)


def render_filename(part: PayloadPart, symbols: RequestSymbols) -> str:
    lookup = _request_lookup(symbols, part.filename)
    if not all(_FILENAME_VALUE.fullmatch(value) for value in lookup.values()):
        raise RenderError("render.invalid_value", "a file name value has characters outside A-Z a-z 0-9 . _ : ~ -")
    return _substitute(part.filename, TemplateLocation.FILENAME, lookup, encode=False)


def render_poll_path(poll: PollSpec, receipt: Mapping[str, object]) -> str:
    """The read-only poll path from receipt fields (strings or integers from the evidence)."""
    lookup: dict[str, str] = {}
    for symbol in _PLACEHOLDER.findall(poll.path):
        name = symbol.removeprefix("receipt.")
        value = receipt.get(name)
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise RenderError("render.missing_value", "a receipt field of the poll path is missing or not a scalar")
        lookup[symbol] = str(value)
    return _path(poll.path, TemplateLocation.POLL_PATH, lookup)


def render_read_path(path: str, query: Mapping[str, str], symbols: RequestSymbols) -> str:
    """A read-only request's path and query (e.g. a profile's summary query), by the same rules as
    the mutation request's."""
    rendered = _path(path, TemplateLocation.PATH, _request_lookup(symbols, path))
    pairs = [
        f"{quote(name, safe='')}="
        + _substitute(template, TemplateLocation.QUERY, _request_lookup(symbols, template), encode=True)
        for name, template in query.items()
    ]
    return rendered + ("?" + "&".join(pairs) if pairs else "")
