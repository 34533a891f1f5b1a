"""Deliver a held request whose client died before it was released (``hold`` + release).

That is the fault the hold exists for: a worker killed while its request is parked at the proxy,
then the parked bytes reach the receiver after all, so the worker's successor finds an effect
nobody saw committed. mitmproxy drops a flow whose client connection is gone as soon as the hook
returns, so the proxy forwards those bytes itself: the same method, target, headers and body,
over a new upstream connection. The receiver's answer is read (bounded) and recorded; it goes
nowhere, because there is no one left to send it to.
"""

from __future__ import annotations

import hashlib

import httpx
from mitmproxy import http

from fault_proxy.request_log import RequestRecord

_NOT_FORWARDED_HEADERS = frozenset({b"host", b"content-length", b"transfer-encoding", b"connection", b"keep-alive",
                                    b"proxy-connection", b"te", b"trailer", b"upgrade"})
"""httpx frames the body and names the upstream itself; hop-by-hop fields end at the proxy."""
_MAX_ANSWER_BYTES = 1 << 20
_TIMEOUT_S = 30.0


async def forward_orphan(request: http.Request, record: RequestRecord) -> None:
    headers = [(name, value) for name, value in request.headers.fields
               if name.lower() not in _NOT_FORWARDED_HEADERS]
    record.forwarded = "attempted"
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT_S, trust_env=False, follow_redirects=False) as client, \
                client.stream(request.method, request.url, headers=headers, content=request.raw_content or b"") \
                as answer:
                record.forwarded = "yes"
                record.reach("forwarded")
                record.upstream_status = answer.status_code
                record.response_header_names = [name.lower() for name in answer.headers]
                record.reach("response_headers")
                digest, size = hashlib.sha256(), 0
                async for chunk in answer.aiter_raw():
                    size += len(chunk)
                    digest.update(chunk)
                    if size > _MAX_ANSWER_BYTES:
                        break
                record.upstream_body_bytes, record.upstream_body_sha256 = size, digest.hexdigest()
                record.reach("response")
    except httpx.HTTPError as exc:
        if record.forwarded == "attempted" and isinstance(exc, httpx.ConnectError):
            record.forwarded = "no"  # the upstream connection never opened: nothing was forwarded
        record.error = f"the released request of a departed client failed upstream: {type(exc).__name__}"
    else:
        record.error = "the client closed its connection during the hold; the proxy delivered the released request"
    record.stamp("orphan_forwarded")
