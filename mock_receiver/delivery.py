"""The fate of each answer, recorded apart from the effect: ``response_delivered`` in the request log.

The request row (and any effect) is committed before the answer leaves, with ``response_delivered =
'unknown'``: a process stopped between the commit and the write leaves exactly that. Right before
writing, the answer checks whether the client is still connected (uvicorn reports a close or a
half-close, which it treats alike, as ``http.disconnect``): if it is gone, nothing is written and the
row becomes ``false`` (0 bytes reached it; the effect stands). Otherwise the head and the body are
handed to the connection in the same event-loop step and the row becomes ``true``: the whole answer
was written to a connection that was still open, which does not prove the client read it.

The head and the body are two writes on the socket (uvicorn writes each ASGI message as it comes):
a kill that lands between those two system calls leaves a client holding a head without a body,
and the row ``unknown``. That window is a documented phase ("head only"), not hidden.

The fate update rides in the next group commit (no await, no fsync of its own); a later admin read
is queued behind it, so it always sees the update.
"""

from __future__ import annotations

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from mock_receiver.ledger import Ledger, RequestRecord


async def client_gone(receive: Receive) -> bool:
    """True when the server already saw the client close (never waits: the probe is cancelled at
    its first suspension, as Starlette's ``Request.is_disconnected`` does)."""
    with anyio.CancelScope() as probe:
        probe.cancel()
        message = await receive()
        return message.get("type") == "http.disconnect"
    return False


class TrackedResponse(Response):
    """An already-rendered response that records whether it could be written."""

    def __init__(self, inner: Response, ledger: Ledger, record: RequestRecord) -> None:
        # No Response.__init__: the inner response is already rendered (body, status, raw headers).
        self.status_code = inner.status_code
        self.body = inner.body
        self.raw_headers = inner.raw_headers
        self.background = None
        self._ledger = ledger
        self._record = record

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        delivered = "false"
        if not await client_gone(receive):
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            await send({"type": "http.response.body", "body": self.body})
            delivered = "true"
        request_id = self._record.request_id
        if request_id is not None and delivered != self._record.response_delivered:
            self._ledger.enqueue(lambda txn: txn.set_delivery(request_id, delivered))


def tracked(response: Response, ledger: Ledger, record: RequestRecord) -> Response:
    return TrackedResponse(response, ledger, record)
