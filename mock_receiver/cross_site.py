"""Cross-site writes to the data API: what a web page can make a browser send without a preflight.

Every bundled personality has ``auth: none``, so a page open in the operator's browser could post a
multipart form to the data port and add an effect in the middle of a certification run. A browser
sends a cross-origin request without asking first (no CORS preflight) only when it is a "simple"
request: method GET, HEAD or POST, and a body whose content type is absent or one of
``application/x-www-form-urlencoded``, ``multipart/form-data`` and ``text/plain``; and every such
request carries an ``Origin`` header. So a data-API request with an ``Origin`` that the behaviour does
not list in ``cross_site.form_origins``, a method that writes and such a content type is refused with
``403 cross_site_request`` before routing (and before authentication): it reaches no handler and is
not in the ledger; ``/_admin/stats`` counts it. A request without ``Origin`` is not a browser's
cross-site request: the bundled sinks send their multipart uploads without one, and they pass.
The Origin is not compared with the request's own Host on purpose: under DNS rebinding a page's
Origin equals the Host it sends.
"""

from __future__ import annotations

from typing import Protocol

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from mock_receiver.behaviour import Behaviour
from mock_receiver.host_guard import is_admin_path
from mock_receiver.problems import ProblemError

SIMPLE_BODY_TYPES = frozenset({"", "application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})
READS = frozenset({"GET", "HEAD", "OPTIONS"})


class CrossSiteSource(Protocol):
    behaviour: Behaviour
    cross_site_refused: int


def _allowed(origin: str, allowed: list[str]) -> bool:
    return "*" in allowed or origin.lower() in {item.lower() for item in allowed}


def is_cross_site_write(headers: Headers, method: str, behaviour: Behaviour) -> bool:
    """True when a browser could have sent this request from another site without a preflight, and the
    behaviour does not accept that site."""
    origins = headers.getlist("origin")
    if not origins or method.upper() in READS:
        return False
    essence = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if essence not in SIMPLE_BODY_TYPES:
        return False  # any other content type needs a preflight, which this receiver never approves
    return len(origins) > 1 or not _allowed(origins[0], behaviour.cross_site.form_origins)


class CrossSiteMiddleware:
    def __init__(self, app: ASGIApp, source: CrossSiteSource) -> None:
        self.app = app
        self.source = source

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or is_admin_path(path):
            await self.app(scope, receive, send)
            return
        behaviour = self.source.behaviour
        if not is_cross_site_write(Headers(scope=scope), str(scope.get("method", "")), behaviour):
            await self.app(scope, receive, send)
            return
        self.source.cross_site_refused += 1
        await _drain(receive, behaviour.limits.max_body_bytes)
        refusal = ProblemError(403, "cross_site_request", "Forbidden",
                               "a form-type request from another origin is refused (see the behaviour's "
                               "cross_site.form_origins)")
        await refusal.response()(scope, receive, send)


async def _drain(receive: Receive, limit: int) -> None:
    """Read and drop the refused body (up to ``limit``) so the client reads the 403 instead of a reset
    connection (the same reason as the authentication gate's drain)."""
    size = 0
    while size <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            return
