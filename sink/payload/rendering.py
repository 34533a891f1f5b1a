"""Canonical request rendering: the profile's typed templates + the finite symbol set -> the
method, path and query, semantic headers, multipart scalar parts and file name of one child.

Pure (no I/O, no clock, no credential): the same plan and child identity always render the same
request, and ``rendered_request_semantics_digest`` is computed from exactly this rendering
(seed: "Canonical identity and conflict policy"). Symbol values are encoded for their location by
``sink.request_templates``, the one template renderer (the runtime renders its read-only poll and
summary paths with it too); template literals were restricted at compile time.
"""

from __future__ import annotations

from dataclasses import dataclass

from sink.contracts.plan import CompiledPlan
from sink.contracts.profile_request import MultipartFileBody
from sink.identity import rendered_request_semantics_digest, semantic_headers
from sink.request_templates import (
    RenderError,
    RequestSymbols,
    render_filename,
    render_path_and_query,
    render_scalar_parts,
    render_semantic_headers,
)

__all__ = ["RenderError", "RenderedRequest", "RequestSymbols", "render_request"]

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


def render_request(plan: CompiledPlan, symbols: RequestSymbols) -> RenderedRequest:
    """Raises ``RenderError`` (stable code, value never repeated) for a value that could change the
    request's shape: an empty or dot path segment, a header or scalar that is not bounded visible
    ASCII, a file name outside its character set."""
    request = plan.operation.request
    fence = plan.operation.mutation_fence
    path_and_query = render_path_and_query(request, symbols, fence)
    headers = render_semantic_headers(request, symbols, fence)
    body = request.body
    if isinstance(body, MultipartFileBody):
        part = body.payload_part
        return RenderedRequest(request.method, path_and_query, headers, request.media_type, None,
                               render_scalar_parts(body, symbols), part.name, render_filename(part, symbols),
                               part.content_type)
    encoding = "gzip" if body.compression == "gzip" else None
    return RenderedRequest(request.method, path_and_query, headers, request.media_type, encoding, (), None, None,
                           None)
