"""Bytes a client sent, as text the request log can always hold.

A method, path, header name or query name is whatever bytes a client put on the wire: not always
UTF-8, sometimes control characters, sometimes megabytes. mitmproxy hands non-UTF-8 bytes over as
lone surrogates, which no JSON encoder can write (one such request made ``GET /log`` fail until
reset). Every such field goes through ``readable`` before it is recorded:

- valid UTF-8 text stays as it is, except ``\\`` (written ``\\\\``) and control characters
  (``\\xNN``), so the escaping can be read back without ambiguity;
- every byte that is not part of valid UTF-8 is written ``\\xNN``;
- the result is cut to a bound (``…`` marks a cut), so one request cannot make the log large.
"""

from __future__ import annotations

import unicodedata

MAX_PATH_CHARS = 2048
MAX_NAME_CHARS = 256
MAX_NAMES = 100
MAX_ERROR_CHARS = 300
CUT_MARK = "\u2026"

_SURROGATE_ESCAPES = range(0xDC80, 0xDD00)  # how "surrogateescape" decoding carries bytes 0x80..0xFF


def _escaped(char: str) -> str:
    code = ord(char)
    if char == "\\":
        return "\\\\"
    if code in _SURROGATE_ESCAPES:
        return f"\\x{code - 0xDC00:02x}"
    if 0xD800 <= code <= 0xDFFF:  # any other lone surrogate: not text, show its code point
        return f"\\u{code:04x}"
    if unicodedata.category(char) == "Cc":
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
    return char


def readable(raw: bytes | str, limit: int) -> str:
    """``raw`` (bytes, or text decoded with ``surrogateescape``) escaped and cut to ``limit`` characters."""
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    out: list[str] = []
    length = 0
    for char in text:
        piece = _escaped(char)
        if length + len(piece) > limit:
            out.append(CUT_MARK)
            break
        out.append(piece)
        length += len(piece)
    return "".join(out)


def readable_names(names: list[bytes] | list[str], limit: int = MAX_NAMES) -> list[str]:
    """Names escaped and bounded; at most ``limit`` of them, a last ``…`` entry marking a cut."""
    shown = [readable(name, MAX_NAME_CHARS) for name in names[:limit]]
    if len(names) > limit:
        shown.append(CUT_MARK)
    return shown
