"""The finite template language of profile paths, queries, headers and multipart scalar parts.

A template is literal text plus ``{symbol}`` placeholders drawn from a closed set; there are no
expressions, filters, escapes or nesting. Anything else (``{{``, ``${``, ``{%``, an unknown
symbol, a stray brace) is refused with ``contract.bad_symbol``. Literal text is restricted to a
conservative character set per location, so the renderer's percent-encoding is the only encoding.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from enum import StrEnum

from sink.contracts._base import contract_error

REQUEST_SYMBOLS: frozenset[str] = frozenset(
    {"resource", "delivery_key", "receiver_mutation_key", "scope.from", "scope.to"}
)
"""Symbols that may appear in the submit request (path, query, headers, scalar parts, filename)."""

RECEIPT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}\Z")
_RECEIPT_SYMBOL = re.compile(r"^receipt\.([a-z][a-z0-9_]{0,31})\Z")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_FORBIDDEN_TEMPLATE_SYNTAX = ("{{", "}}", "${", "{%", "%}", "{#", "#}", "<%", "%>", "$(", "`")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_ENCODED_TRAVERSAL = re.compile(r"%(?:2e|2f|5c|00|25)", re.IGNORECASE)

# Literal characters allowed outside placeholders (RFC 3986 pchar without '%' for paths: the
# renderer percent-encodes values, profiles never pre-encode).
_PATH_LITERAL = re.compile(r"^[A-Za-z0-9\-._~!$&'()*+,;=:@/]*\Z")
_QUERY_LITERAL = re.compile(r"^[A-Za-z0-9\-._~!$'()*+,;:@/]*\Z")
_HEADER_LITERAL = re.compile(r"^[\x20-\x7e]*\Z")
_SCALAR_LITERAL = re.compile(r"^[A-Za-z0-9\-._~:@+ ]*\Z")

MAX_TEMPLATE_LENGTH = 512


class TemplateLocation(StrEnum):
    PATH = "path"
    POLL_PATH = "poll_path"
    QUERY = "query"
    HEADER = "header"
    SCALAR = "scalar"
    FILENAME = "filename"


_LITERALS = {
    TemplateLocation.PATH: _PATH_LITERAL,
    TemplateLocation.POLL_PATH: _PATH_LITERAL,
    TemplateLocation.QUERY: _QUERY_LITERAL,
    TemplateLocation.HEADER: _HEADER_LITERAL,
    TemplateLocation.SCALAR: _SCALAR_LITERAL,
    TemplateLocation.FILENAME: re.compile(r"^[A-Za-z0-9\-._]*\Z"),
}


def _check_control_characters(value: str) -> None:
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            raise contract_error("contract.control_character", "control or format characters are not allowed")


def _check_traversal(value: str) -> None:
    if "\\" in value or _ENCODED_TRAVERSAL.search(value):
        raise contract_error(
            "contract.path_traversal", "backslashes and encoded '.', '/', '\\', '%' or NUL are not allowed"
        )
    segments = re.split(r"[/?&=]", value)
    if any(segment in (".", "..") for segment in segments) or ".." in value:
        raise contract_error("contract.path_traversal", "'.' or '..' segments are not allowed")


@functools.lru_cache(maxsize=512)
def template_symbols(value: str, location: TemplateLocation) -> tuple[str, ...]:
    """Validate ``value`` as a template for ``location``; return the placeholder symbols in order.

    Raises ``PydanticCustomError`` with a stable ``contract.*`` code; the message never repeats
    the value. Cached: a pure function of its arguments (a refusal is not cached and is raised
    again), and every request a delivery renders checks the plan's few templates once more.
    """
    if len(value) > MAX_TEMPLATE_LENGTH:
        raise contract_error("contract.invalid_value", f"longer than {MAX_TEMPLATE_LENGTH} characters")
    _check_control_characters(value)
    if location in (TemplateLocation.PATH, TemplateLocation.POLL_PATH):
        if value.startswith("//") or _SCHEME.match(value):
            raise contract_error("contract.absolute_url", "must be a path relative to the bound authority")
        if not value.startswith("/"):
            raise contract_error("contract.invalid_value", "a path must start with '/'")
        if "?" in value or "#" in value:
            raise contract_error("contract.invalid_value", "query and fragment belong in request.query")
    elif "://" in value or value.startswith("//"):
        raise contract_error("contract.absolute_url", "absolute URLs are not allowed")
    elif location is not TemplateLocation.HEADER and _SCHEME.match(value) and not value.startswith("{"):
        raise contract_error("contract.absolute_url", "URI schemes are not allowed")
    _check_traversal(value)
    if any(token in value for token in _FORBIDDEN_TEMPLATE_SYNTAX):
        raise contract_error(
            "contract.bad_symbol", "only single-brace placeholders from the symbol set are allowed"
        )
    symbols: list[str] = []
    for match in _PLACEHOLDER.finditer(value):
        symbols.append(_check_symbol(match.group(1), location))
    literal = _PLACEHOLDER.sub("", value)
    if "{" in literal or "}" in literal:
        raise contract_error("contract.bad_symbol", "unbalanced '{' or '}'")
    if not _LITERALS[location].fullmatch(literal):
        raise contract_error(
            "contract.invalid_value", f"literal text contains characters not allowed in a {location.value}"
        )
    return tuple(symbols)


def _check_symbol(symbol: str, location: TemplateLocation) -> str:
    if symbol in REQUEST_SYMBOLS:
        return symbol
    if _RECEIPT_SYMBOL.fullmatch(symbol):
        if location is TemplateLocation.POLL_PATH:
            return symbol
        raise contract_error("contract.bad_symbol", "receipt.* symbols are allowed only in poll paths")
    raise contract_error(
        "contract.bad_symbol",
        "unknown placeholder; allowed: {resource}, {delivery_key}, {receiver_mutation_key}, "
        "{scope.from}, {scope.to} and {receipt.<name>} in poll paths",
    )


def receipt_names(symbols: tuple[str, ...]) -> tuple[str, ...]:
    """The receipt field names referenced by ``{receipt.<name>}`` placeholders."""
    return tuple(symbol.split(".", 1)[1] for symbol in symbols if symbol.startswith("receipt."))
