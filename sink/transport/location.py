"""Acceptance of a response's ``Location`` / ``Operation-Location`` as a receipt path.

Seed ("Platform operation profile"): an absolute Location or Operation-Location is accepted only
when it canonicalises to the binding's own origin and an allowlisted relative receipt path.
Scheme, authority, port, userinfo, fragment, path escape and DNS-policy changes fail closed.
A pure function: data never chooses where the sink connects, or to whom it sends a credential.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_LOCATION_LENGTH = 2048
_DEFAULT_PORTS = {"https": 443, "http": 80}
_RECEIPT_VALUE = re.compile(r"^[A-Za-z0-9._~-]{1,200}\Z")
_PLACEHOLDER = re.compile(r"^\{receipt\.([a-z][a-z0-9_]{0,31})\}\Z")
_ENCODED_ESCAPE = re.compile(r"%(?:2e|2f|5c|00|25)", re.IGNORECASE)


class LocationRefused(ValueError):
    """Stable ``reason``; the message never repeats the header value."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"location refused: {reason}")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class AcceptedLocation:
    path: str
    """The relative receipt path, exactly as allowlisted (no query, no fragment)."""
    receipt: Mapping[str, str]
    """Values bound by the template's ``{receipt.<name>}`` placeholders."""


def _origin(authority: str) -> tuple[str, str, int]:
    parts = urlsplit(authority)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    return scheme, host, parts.port or _DEFAULT_PORTS.get(scheme, 0)


def _check_characters(value: str) -> None:
    if len(value) > MAX_LOCATION_LENGTH:
        raise LocationRefused("too_long")
    if not value.isascii():
        raise LocationRefused("invalid_characters")
    for char in value:
        if char in " \\" or unicodedata.category(char) in ("Cc", "Cf"):
            raise LocationRefused("invalid_characters")


def _check_origin(scheme: str, netloc: str, authority: str) -> None:
    bound_scheme, bound_host, bound_port = _origin(authority)
    if scheme and scheme.lower() != bound_scheme:
        raise LocationRefused("scheme_changed")
    if "@" in netloc:
        raise LocationRefused("userinfo")
    parts = urlsplit(f"{bound_scheme}://{netloc}")
    try:
        port = parts.port
    except ValueError:
        raise LocationRefused("port_changed") from None
    host = parts.hostname or ""
    # No DNS-level canonicalisation (trailing dot, IP for name, case of an IDN): another
    # spelling is another name under the DNS policy, so only an exact match is the same host.
    if host != bound_host:
        raise LocationRefused("authority_changed")
    if (port or _DEFAULT_PORTS.get(bound_scheme, 0)) != bound_port:
        raise LocationRefused("port_changed")


def _check_path(path: str) -> list[str]:
    if not path.startswith("/"):
        raise LocationRefused("relative_reference")
    if _ENCODED_ESCAPE.search(path):
        raise LocationRefused("path_escape")
    segments = path[1:].split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        raise LocationRefused("path_escape")
    return segments


def _match(segments: list[str], template: str) -> dict[str, str] | None:
    expected = template[1:].split("/")
    if len(expected) != len(segments):
        return None
    captured: dict[str, str] = {}
    for want, got in zip(expected, segments, strict=True):
        placeholder = _PLACEHOLDER.fullmatch(want)
        if placeholder is None:
            if want != got:
                return None
        elif not _RECEIPT_VALUE.fullmatch(got) or got in (".", ".."):
            return None
        else:
            captured[placeholder.group(1)] = got
    return captured


def accept_location(value: str, *, authority: str, allowed_paths: Sequence[str]) -> AcceptedLocation:
    """Accept ``value`` as one of ``allowed_paths`` (templates such as the profile's poll path,
    ``/v1/jobs/{receipt.id}``) on the origin ``authority``; raise ``LocationRefused`` otherwise."""
    _check_characters(value)
    if "#" in value:
        raise LocationRefused("fragment")
    parts = urlsplit(value)
    if parts.scheme or value.startswith("//"):
        _check_origin(parts.scheme, parts.netloc, authority)
    if parts.query or "?" in value:
        raise LocationRefused("query")
    segments = _check_path(parts.path)
    for template in allowed_paths:
        captured = _match(segments, template)
        if captured is not None:
            return AcceptedLocation(path=parts.path, receipt=captured)
    raise LocationRefused("path_not_allowlisted")
