"""RFC 9457 problem details: the only error shape the receiver emits."""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.responses import Response

PROBLEM_MEDIA_TYPE = "application/problem+json"
_TYPE_PREFIX = "urn:restproof:mock-receiver:problem:"


class ProblemError(Exception):
    """Raised inside a handler; rendered as problem+json by the app's exception handler."""

    def __init__(
        self,
        status: int,
        slug: str,
        title: str,
        detail: str | None = None,
        *,
        extra: Mapping[str, object] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {slug}")
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail
        self.extra = dict(extra or {})
        self.headers = dict(headers or {})

    def body(self) -> dict[str, object]:
        document: dict[str, object] = {"type": _TYPE_PREFIX + self.slug, "title": self.title,
                                       "status": self.status}
        if self.detail:
            document["detail"] = self.detail
        document.update(self.extra)
        return document

    def response(self) -> Response:
        return problem_response(self.status, self.body(), self.headers)


def problem_response(status: int, body: Mapping[str, object], headers: Mapping[str, str] | None = None
                     ) -> Response:
    return Response(
        content=json.dumps(body, separators=(",", ":")).encode("utf-8"),
        status_code=status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=dict(headers or {}),
    )


def bad_request(slug: str, detail: str) -> ProblemError:
    return ProblemError(400, slug, "Bad request", detail)
