"""Cross-site refusal for every state-changing admin request: the ground truth must not be erasable
by a web page open in the operator's browser.

A page can send a cross-origin "simple" request (a form post, or fetch with a CORS-safelisted
content type) without any preflight, and the browser delivers it even though the page cannot read
the answer. Three checks close that, each alone sufficient against a browser and together cheap:

* the custom header ``X-Restproof-Admin: 1`` (a page cannot add a custom header without a CORS
  preflight, which this receiver never approves; the fault proxy's control API uses the same one);
* a body, when there is one, must have a JSON content type (or YAML for the behaviour document):
  the form types ``application/x-www-form-urlencoded``, ``multipart/form-data`` and ``text/plain``
  are exactly the ones a page can send without a preflight;
* an ``Origin`` header, when present, must be this server's own origin.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from mock_receiver import strict_json
from mock_receiver.documents import MAX_BYTES as MAX_DOCUMENT_BYTES
from mock_receiver.intake import read_admin_body
from mock_receiver.problems import ProblemError

ADMIN_HEADER = "X-Restproof-Admin"
ADMIN_HEADER_VALUE = "1"
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_ADMIN_BODY_BYTES = 65_536
"""Every admin body but the behaviour document (which has the document bound)."""
_JSON_TYPES = frozenset({"application/json"})
_YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml"})


def _essence(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _is_json(essence: str) -> bool:
    return essence in _JSON_TYPES or (essence.startswith("application/") and essence.endswith("+json"))


def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    return "transfer-encoding" in request.headers or (length is not None and length.strip() not in ("", "0"))


def has_admin_header(values: list[str]) -> bool:
    """The one rule the receiver and the fault proxy share: the header appears exactly once, and its
    value, after the optional whitespace HTTP strips (SP and HTAB at both ends), is exactly ``1``."""
    return len(values) == 1 and values[0].strip(" \t") == ADMIN_HEADER_VALUE


def cross_site_problem(request: Request, *, yaml_allowed: bool) -> ProblemError | None:
    """The reason to refuse this state-changing admin request, or None when it may proceed."""
    if not has_admin_header(request.headers.getlist(ADMIN_HEADER)):
        return ProblemError(403, "admin_header_required", "Forbidden",
                            f"state-changing admin requests need the header {ADMIN_HEADER}: {ADMIN_HEADER_VALUE} "
                            "(exactly once)")
    origins = request.headers.getlist("origin")
    if origins:
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if len(origins) > 1 or origins[0].lower() != own.lower():
            return ProblemError(403, "foreign_origin", "Forbidden",
                                "admin requests from another origin are refused")
    if _has_body(request):
        essence = _essence(request.headers.get("content-type", ""))
        if not (_is_json(essence) or (yaml_allowed and essence in _YAML_TYPES)):
            allowed = "application/json" + (" or application/yaml" if yaml_allowed else "")
            return ProblemError(415, "json_required", "Unsupported media type",
                                f"an admin request body must be {allowed}")
    return None


def admin_body(request: Request) -> bytes:
    """The body :class:`AdminRoute` read (bounded) and checked before the handler ran."""
    body: bytes = request.state.admin_body
    return body


class AdminRoute(APIRoute):
    """An admin route whose state-changing methods pass :func:`cross_site_problem` first (before the
    body is read or validated, so a cross-site request learns nothing beyond the refusal). The body is
    then read within its bound and, when it is JSON, parsed by the strict reader (a repeated member
    name or a non-finite number is a 400 whatever the handler would do with it); handlers take it
    from :func:`admin_body`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if not (self.methods or set()) & STATE_CHANGING:
            return handler
        yaml_allowed = self.path_format.endswith("/behaviour")
        limit = MAX_DOCUMENT_BYTES if yaml_allowed else MAX_ADMIN_BODY_BYTES

        async def guarded(request: Request) -> Response:
            problem = cross_site_problem(request, yaml_allowed=yaml_allowed)
            if problem is not None:
                return problem.response()
            try:
                body = await read_admin_body(request, limit)
                if body and _is_json(_essence(request.headers.get("content-type", ""))):
                    strict_json.loads_bytes(body)
            except ProblemError as refused:
                return refused.response()
            request.state.admin_body = body
            return await handler(request)

        return guarded
