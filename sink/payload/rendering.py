"""Canonical request rendering: the profile's typed templates + the finite symbol set -> the
method, path and query, semantic headers, multipart scalar parts and file name of one child.

Pure (no I/O, no clock, no credential): the same plan and child identity always render the same
request, and ``rendered_request_semantics_digest`` is computed from exactly this rendering
(seed: "Canonical identity and conflict policy"). Symbol values are percent-encoded for their
location; template literals were restricted at compile time, so this is the only encoding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from urllib.parse import quote

from sink.contracts.plan import CompiledPlan
from sink.contracts.profile_request import MultipartFileBody
from sink.identity import rendered_request_semantics_digest, semantic_headers

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
_PATH_SAFE = "-._~!$&'()*+,;=:@"
_QUERY_SAFE = "-._~!$'()*+,;:@/"


@dataclass(frozen=True, slots=True)
class RequestSymbols:
    resource: str
    delivery_key: str
    receiver_mutation_key: str
    scope_from: date
    scope_to: date

    def value(self, symbol: str) -> str:
        values = {
            "resource": self.resource,
            "delivery_key": self.delivery_key,
            "receiver_mutation_key": self.receiver_mutation_key,
            "scope.from": self.scope_from.isoformat(),
            "scope.to": self.scope_to.isoformat(),
        }
        if symbol not in values:
            raise ValueError("not a request symbol")  # the compiler already refused it
        return values[symbol]


@dataclass(frozen=True, slots=True)
class RenderedRequest:
    method: str
    path_and_query: str
    headers: tuple[tuple[str, str], ...]
    """Profile headers as rendered (credentials and framing headers are never among them)."""
    media_type: str
    content_encoding: str | None
    scalar_parts: tuple[tuple[str, str], ...]
    payload_part_name: str | None
    filename: str | None
    part_content_type: str | None

    @property
    def multipart(self) -> bool:
        return self.payload_part_name is not None

    def content_type(self, boundary: str | None) -> str:
        return f"{self.media_type}; boundary={boundary}" if boundary is not None else self.media_type

    def semantics_digest(self, *, boundary: str | None, sealed_payload_digest: str) -> str:
        return rendered_request_semantics_digest(
            method=self.method,
            normalized_rendered_path_and_query=self.path_and_query,
            semantic_headers=semantic_headers(dict(self.headers)),
            ordered_scalar_multipart_parts=self.scalar_parts,
            payload_part_name=self.payload_part_name,
            deterministic_filename=self.filename,
            content_disposition_and_type={
                "content_type": self.content_type(boundary),
                "content_encoding": self.content_encoding,
                "part_content_type": self.part_content_type,
                "disposition": "form-data" if self.multipart else None,
            },
            multipart_boundary=boundary,
            sealed_payload_digest=sealed_payload_digest,
        )


def _fill(template: str, symbols: RequestSymbols, safe: str | None) -> str:
    def substitute(match: re.Match[str]) -> str:
        text = symbols.value(match.group(1))
        return text if safe is None else quote(text, safe=safe)

    return _PLACEHOLDER.sub(substitute, template)


def render_request(plan: CompiledPlan, symbols: RequestSymbols) -> RenderedRequest:
    request = plan.operation.request
    path = _fill(request.path, symbols, _PATH_SAFE)
    query = "&".join(f"{name}={_fill(value, symbols, _QUERY_SAFE)}" for name, value in request.query.items())
    headers = tuple((name, _fill(value, symbols, None)) for name, value in request.headers.items())
    body = request.body
    if isinstance(body, MultipartFileBody):
        part = body.payload_part
        scalars = tuple(
            (name, spec.value if spec.value is not None else symbols.value(str(spec.value_from)))
            for name, spec in body.scalar_parts.items()
        )
        return RenderedRequest(request.method, path + (f"?{query}" if query else ""), headers, request.media_type,
                               None, scalars, part.name, _fill(part.filename, symbols, None), part.content_type)
    encoding = "gzip" if body.compression == "gzip" else None
    return RenderedRequest(request.method, path + (f"?{query}" if query else ""), headers, request.media_type,
                           encoding, (), None, None, None)
