"""DNS rebinding: the admin API answers only requests whose ``Host`` names this listener.

A page served from ``evil.example`` whose name then resolves to 127.0.0.1 is, to the browser, the same
origin as the receiver: it could reset the ledger, advance the clock, replace the behaviour and read
``/_admin/effects``, and the Origin check cannot tell (its Origin equals the Host it sends). What the
page cannot choose is the ``Host`` header: it is always the page's own name. So every admin request,
reads included, is refused with 403 before anything else unless ``Host`` is one of

* the loopback literals ``127.0.0.1``, ``[::1]`` and ``localhost``, or a name the receiver was started
  with (``--host`` when it is not a wildcard, each ``--allow-host``),
* with the listener's own port (the scheme's default port when the header has none).

``0.0.0.0`` and ``::`` are never allowed: browsers send requests for ``http://0.0.0.0:PORT`` to the
local machine, with that Host.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from mock_receiver.problems import ProblemError

LOOPBACK_NAMES = ("127.0.0.1", "[::1]", "localhost")
WILDCARD_NAMES = frozenset({"0.0.0.0", "[::]", "::", ""})  # noqa: S104 (names refused, never bound)
ADMIN_PREFIX = "/_admin"


def is_admin_path(path: str) -> bool:
    """The admin API's paths: ``/_admin`` and everything under it (not ``/_administer``)."""
    return path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")


_NAME = r"\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+"
_HOST = re.compile(rf"(?P<name>{_NAME})(?::(?P<port>[0-9]{{1,5}}))?\Z")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def host_name(name: str) -> str:
    """A name as it appears in a Host header: lower case, an IPv6 literal bracketed."""
    name = name.strip().lower()
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


def is_host_name(name: str) -> bool:
    """A name that can appear in a Host header (a DNS name or an IP literal, IPv6 bracketed)."""
    if name.startswith("["):
        try:
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            return False
    return re.fullmatch(_NAME, name) is not None


def allowed_host_names(started_with: Iterable[str]) -> frozenset[str]:
    """The loopback literals plus the names given at start (wildcards left out)."""
    names = {host_name(name) for name in started_with}
    return frozenset(LOOPBACK_NAMES) | (names - WILDCARD_NAMES)


def host_allowed(scope: Scope, names: frozenset[str]) -> bool:
    hosts = [value for key, value in scope.get("headers", ()) if key == b"host"]
    server = scope.get("server")
    if len(hosts) != 1 or not server:
        return False
    match = _HOST.match(bytes(hosts[0]).decode("latin-1"))
    if match is None or match["name"].lower() not in names:
        return False
    default = _DEFAULT_PORTS.get(str(scope.get("scheme", "http")), 80)
    port = int(match["port"]) if match["port"] else default
    return port == int(server[1])


class AdminHostGuard:
    """Refuses an admin request whose Host is not allowed (``admin_only``: only under ``/_admin``,
    for the data listener that also serves the admin API)."""

    def __init__(self, app: ASGIApp, names: frozenset[str], *, admin_only: bool) -> None:
        self.app = app
        self.names = names
        self.admin_only = admin_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._guarded(str(scope.get("path", ""))) \
                and not host_allowed(scope, self.names):
            refusal = ProblemError(403, "forbidden_host", "Forbidden",
                                   "the Host header does not name this admin listener")
            await refusal.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _guarded(self, path: str) -> bool:
        return not self.admin_only or is_admin_path(path)
