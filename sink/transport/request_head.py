"""The request head ``HttpxRestTransport`` hands to httpcore: target, ``Host`` and default headers.

These are byte for byte what ``httpx.Client(headers={"user-agent": USER_AGENT})`` built for the
same request before the transport dropped the client (tests/transport/test_tr_request_head.py
holds each function against httpx). Building them here costs a regular expression and a list;
httpx's URL parser and header merging cost a third of a small request's client CPU.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import httpcore

USER_AGENT = "restproof-sink"
_DEFAULT_HEADERS = (("Accept", "*/*"), ("Connection", "keep-alive"), ("user-agent", USER_AGENT))
"""httpx's client defaults in its order, ``user-agent`` replaced by ours. Its default
``Accept-Encoding`` is left out: the transport always sends ``accept-encoding: identity``, which
replaced it."""
_MAX_COMPONENT = 65_536
"""httpx's bound on a URL component (``MAX_URL_LENGTH``): longer is an invalid URL."""
_PLAIN_TARGET = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*(?:\?[A-Za-z0-9\-._~!$&'()*+,;=:@/%?]*)?")
"""Characters httpx sends unchanged in a path (and, after ``?``, a query). Anything else takes
httpx's own parser (percent-encoding, control characters refused)."""


@dataclass(frozen=True, slots=True)
class Origin:
    raw_scheme: bytes
    raw_host: bytes
    port: int | None
    """None for the scheme's default port, as httpx passes it to httpcore."""
    host_header: bytes

    @classmethod
    def of(cls, scheme: str, host: str, port: int) -> Origin:
        """``host`` as ``urlsplit`` gives it (lower case, an IPv6 literal without brackets)."""
        if not host.isascii():  # an internationalised name: httpx's IDNA 2008 encoding, exactly
            import httpx  # noqa: PLC0415 - only for a non-ASCII authority

            url = httpx.URL(scheme=scheme, host=host, port=port)
            return cls(url.raw_scheme, url.raw_host, url.port, url.netloc)
        default = port == (443 if scheme == "https" else 80)
        netloc = f"[{host}]" if ":" in host else host
        if not default:
            netloc = f"{netloc}:{port}"
        return cls(scheme.encode("ascii"), host.lower().encode("ascii"), None if default else port,
                   netloc.encode("ascii"))

    def url(self, target: bytes) -> httpcore.URL:
        return httpcore.URL(scheme=self.raw_scheme, host=self.raw_host, port=self.port, target=target)


def request_target(path_and_query: str) -> bytes | None:
    """The request target httpx would send for this path and query; None when httpx refuses it or
    it does not start with ``/`` (a prepared request names no other origin)."""
    if len(path_and_query) <= _MAX_COMPONENT and _PLAIN_TARGET.fullmatch(path_and_query):
        path = path_and_query.partition("?")[0]
        if not {".", ".."} & set(path.split("/")):  # httpx would drop dot segments
            return path_and_query.encode("ascii")
    import httpx  # noqa: PLC0415 - the rare target that needs httpx's percent-encoding

    try:
        url = httpx.URL(scheme="http", host="origin.invalid", raw_path=path_and_query.encode("ascii"))
    except (httpx.InvalidURL, UnicodeEncodeError):
        return None
    return url.raw_path if url.raw_path.startswith(b"/") and not url.fragment else None


def request_headers(origin: Origin, headers: Sequence[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """``Host`` (unless given), httpx's defaults that ``headers`` do not replace, then ``headers``
    in order. ASCII only: another value raises UnicodeEncodeError, as httpx did."""
    given = {name.lower() for name, _ in headers}
    head = [] if "host" in given else [(b"Host", origin.host_header)]
    head.extend((name.encode("ascii"), value.encode("ascii")) for name, value in _DEFAULT_HEADERS
                if name.lower() not in given)
    head.extend((name.encode("ascii"), value.encode("ascii")) for name, value in headers)
    return head
