"""Request guards shared by the two control APIs (HTTP-phase control API, Toxiproxy-compatible API).

One pure ASGI middleware checks every request before a route sees it:

- bounded bodies: a declared ``Content-Length`` above the limit (or not a plain number) is refused
  before a byte is read, and a chunked body is counted while it is read, so a 50 MB name never
  reaches the application;
- JSON bodies: a non-empty body must say it is JSON (``application/json`` or ``+json``), must
  parse, and may nest at most ``MAX_JSON_DEPTH`` levels (Python's parser raises ``RecursionError``
  on very deep input, and deep values would make every later walk over them recursive too);
- cross-site requests: an ``Origin`` that is not the API's own loopback address, a ``Host`` that
  does not name loopback on a loopback server (DNS rebinding), where the API asks for it a browser
  (``User-Agent`` starting ``Mozilla/``, the check real Toxiproxy makes), and where the API asks
  for it a state-changing request without ``X-Restproof-Admin: 1`` are refused with 403.

The body is read once here and replayed to the application, so routes read it as usual. Errors are
rendered by the API's own ``render`` callable (problem+json for one API, Toxiproxy's
``{"error", "status"}`` for the other).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response

MAX_BODY_BYTES = 1 << 20
MAX_JSON_DEPTH = 32
ADMIN_HEADER = "x-restproof-admin"
ADMIN_VALUE = "1"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

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


def json_depth(value: object) -> int:
    """Nesting depth of a parsed JSON value, computed without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def parse_json(raw: bytes) -> Any:
    """Parse a request body as bounded JSON, or raise ``Refused`` (400)."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise Refused(400, "invalid-input", f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError):
        raise Refused(400, "invalid-input", "body is not valid JSON") from None
    if json_depth(value) > MAX_JSON_DEPTH:
        raise Refused(400, "invalid-input", f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def is_json_media_type(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


@dataclass(frozen=True)
class GuardPolicy:
    render: Render
    refuse_browsers: bool = False  # real Toxiproxy's guard: User-Agent starting "Mozilla/" gets 403
    require_admin_header: bool = False  # state-changing requests must carry X-Restproof-Admin: 1
    max_body_bytes: int = MAX_BODY_BYTES


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _own_origins(scope: Scope) -> set[str]:
    server = scope.get("server")
    if not server:
        return set()
    host, port = server[0], server[1]
    own = {f"http://{name}:{port}" for name in _LOOPBACK_NAMES}
    own.add(f"http://[{host}]:{port}" if ":" in str(host) else f"http://{host}:{port}")
    return own


def _host_allowed(scope: Scope) -> bool:
    """On a loopback server, the Host header must name loopback too: this defeats DNS rebinding,
    where a page under a foreign name that resolves to 127.0.0.1 becomes "same-origin"."""
    server = scope.get("server")
    host_header = _header(scope, b"host")
    if not server or host_header is None:
        return True
    bound = str(server[0])
    if bound not in ("127.0.0.1", "::1") and not bound.startswith("127."):
        return True
    name = host_header.rsplit(":", 1)[0] if not host_header.endswith("]") else host_header
    return name.strip("[]").lower() in {"localhost", "::1", bound} or name.startswith("127.")


def check_headers(scope: Scope, policy: GuardPolicy) -> None:
    """Refuse browsers, foreign origins, a missing admin header and oversized declared bodies."""
    method = str(scope.get("method", "GET")).upper()
    if policy.refuse_browsers and (_header(scope, b"user-agent") or "").startswith("Mozilla/"):
        raise Refused(403, "forbidden", "User agent not allowed")
    if not _host_allowed(scope):
        raise Refused(403, "forbidden", "the Host header does not name this loopback server")
    origin = _header(scope, b"origin")
    if origin is not None and origin not in _own_origins(scope):
        raise Refused(403, "forbidden", "cross-origin requests are refused")
    admin = (_header(scope, ADMIN_HEADER.encode()) or "").strip()
    if policy.require_admin_header and method not in SAFE_METHODS and admin != ADMIN_VALUE:
        raise Refused(403, "forbidden", f"state-changing requests need the header X-Restproof-Admin: {ADMIN_VALUE}")
    declared = _header(scope, b"content-length")
    if declared is not None:
        if not declared.isdigit() or len(declared) > 15:
            raise Refused(400, "invalid-input", "Content-Length is not a valid number")
        if int(declared) > policy.max_body_bytes:
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
            await response(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(self, receive: Receive) -> bytes:
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
