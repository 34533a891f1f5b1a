"""Request guards shared by the two control APIs (HTTP-phase control API, Toxiproxy-compatible API).

One pure ASGI middleware checks every request before a route sees it, in this order:

1. ``Host``: exactly one, and one of an allowlist (the loopback literals ``127.0.0.1``, ``[::1]``
   and ``localhost`` plus the host the API was started on, each with the listener's own port).
   Anything else is DNS rebinding, where a page under a foreign name that resolves to 127.0.0.1
   becomes "same-origin" with the API: refused with 403, reads included, before anything else.
2. where the API asks for it, a browser (``User-Agent`` starting ``Mozilla/``, the check real
   Toxiproxy makes);
3. an ``Origin`` other than ``http://`` + an allowed ``Host``;
4. where the API asks for it, a state-changing request without ``X-Restproof-Admin: 1``: the
   header exactly once, its value exactly ``1`` once the optional whitespace HTTP allows around a
   field value (SP and HTAB) is stripped. The mock receiver's admin API applies the same rule.
5. bounded bodies: a declared ``Content-Length`` above the limit (or not a plain number) is refused
   before a byte is read, a chunked body is counted while it is read, and the whole body must
   arrive within ``body_timeout`` seconds (408);
6. a non-empty body must say it is JSON (``application/json`` or ``+json``) and be strict JSON
   (``fault_proxy.strict_json``: no duplicate member names, no non-finite numbers, bounded depth).

The body is read once here and replayed to the application, so routes read it as usual. Errors are
rendered by the API's own ``render`` callable (problem+json for one API, Toxiproxy's
``{"error", "status"}`` for the other) and carry ``Connection: close``: a refused request's body
may be partly unread, and the connection must not stay open for the rest of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response

from fault_proxy.strict_json import JsonRefused, loads_strict

MAX_BODY_BYTES = 1 << 20
BODY_TIMEOUT_S = 10.0
ADMIN_HEADER = "x-restproof-admin"
ADMIN_VALUE = "1"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_HOST_NAMES = ("127.0.0.1", "[::1]", "localhost")
_HTTP_OWS = b" \t"  # the only whitespace HTTP strips around a field value (RFC 9110, 5.6.3)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Render = Callable[[int, str, str], Response]  # (status, kind, detail) -> response


class Refused(Exception):
    """A request refused by a guard: HTTP status, a stable kind and a message without user input."""

    def __init__(self, status: int, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.kind, self.detail = status, kind, detail


def parse_json(raw: bytes) -> Any:
    """Parse a request body as strict, bounded JSON, or raise ``Refused`` (400)."""
    try:
        return loads_strict(raw)
    except JsonRefused as exc:
        raise Refused(400, "invalid-input", str(exc)) from None


def is_json_media_type(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def host_allowlist(started_on: Iterable[str], port: int) -> frozenset[str]:
    """The ``Host`` values an API listening on ``port`` accepts (lower case).

    ``started_on``: the host names or addresses the API was started with (an IPv6 literal with or
    without brackets). Every name needs the port, except on port 80, where HTTP clients omit it.
    """
    names = set(LOOPBACK_HOST_NAMES)
    for host in started_on:
        bare = host.strip("[]").lower()
        if bare:
            names.add(f"[{bare}]" if ":" in bare else bare)
    allowed = {f"{name}:{port}" for name in names}
    if port == 80:
        allowed |= names
    return frozenset(allowed)


@dataclass(frozen=True)
class GuardPolicy:
    render: Render
    allowed_hosts: frozenset[str]  # from host_allowlist(); an empty set refuses every request
    refuse_browsers: bool = False  # real Toxiproxy's guard: User-Agent starting "Mozilla/" gets 403
    require_admin_header: bool = False  # state-changing requests must carry X-Restproof-Admin: 1
    max_body_bytes: int = MAX_BODY_BYTES
    body_timeout: float = BODY_TIMEOUT_S


def _values(scope: Scope, name: bytes) -> list[bytes]:
    return [bytes(value) for key, value in scope.get("headers", ()) if key == name]


def _header(scope: Scope, name: bytes) -> str | None:
    values = _values(scope, name)
    return values[0].decode("latin-1") if values else None


def _check_host(scope: Scope, policy: GuardPolicy) -> None:
    hosts = _values(scope, b"host")
    if len(hosts) != 1 or hosts[0].strip(_HTTP_OWS).decode("latin-1").lower() not in policy.allowed_hosts:
        raise Refused(403, "forbidden", "the Host header does not name this server (DNS rebinding is refused)")


def _check_origin(scope: Scope, policy: GuardPolicy) -> None:
    origins = _values(scope, b"origin")
    if not origins:
        return
    own = {f"http://{host}" for host in policy.allowed_hosts}
    if len(origins) != 1 or origins[0].strip(_HTTP_OWS).decode("latin-1").lower() not in own:
        raise Refused(403, "forbidden", "cross-origin requests are refused")


def admin_header_ok(values: list[bytes]) -> bool:
    """``X-Restproof-Admin`` present exactly once with the value ``1`` (around it SP/HTAB only)."""
    return len(values) == 1 and values[0].strip(_HTTP_OWS) == ADMIN_VALUE.encode()


def check_headers(scope: Scope, policy: GuardPolicy) -> None:
    """Refuse rebinding, browsers, foreign origins, a missing admin header and oversized declared bodies."""
    _check_host(scope, policy)
    method = str(scope.get("method", "GET")).upper()
    if policy.refuse_browsers and (_header(scope, b"user-agent") or "").startswith("Mozilla/"):
        raise Refused(403, "forbidden", "User agent not allowed")
    _check_origin(scope, policy)
    if (policy.require_admin_header and method not in SAFE_METHODS
            and not admin_header_ok(_values(scope, ADMIN_HEADER.encode()))):
        raise Refused(403, "forbidden", f"state-changing requests need the header X-Restproof-Admin: {ADMIN_VALUE}")
    declared = _values(scope, b"content-length")
    if declared:
        text = declared[0].decode("latin-1")
        if len(declared) != 1 or not text.isdigit() or not text.isascii() or len(text) > 15:
            raise Refused(400, "invalid-input", "Content-Length is not a valid number")
        if int(text) > policy.max_body_bytes:
            raise Refused(413, "too-large", f"body larger than {policy.max_body_bytes} bytes")


class GuardMiddleware:
    def __init__(self, app: ASGIApp, policy: GuardPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            check_headers(scope, self.policy)
            body = await self._read_body(receive)
            if body.strip():
                if not is_json_media_type(_header(scope, b"content-type") or ""):
                    raise Refused(415, "unsupported-media-type", "a request body must be JSON (application/json)")
                parse_json(body)
        except Refused as refused:
            response = self.policy.render(refused.status, refused.kind, refused.detail)
            response.headers["connection"] = "close"
            await response(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(self, receive: Receive) -> bytes:
        try:
            async with asyncio.timeout(self.policy.body_timeout):
                return await self._read_bounded(receive)
        except TimeoutError:
            raise Refused(408, "timeout", f"the body did not arrive within {self.policy.body_timeout:g} s") from None

    async def _read_bounded(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Refused(400, "invalid-input", "client disconnected while sending the body")
            chunk = bytes(message.get("body", b""))
            size += len(chunk)
            if size > self.policy.max_body_bytes:
                raise Refused(413, "too-large", f"body larger than {self.policy.max_body_bytes} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the disconnect as usual

    return replay
