"""How many data requests the receiver is still working on (``GET /_admin/stats``).

The certification judge reads the receiver's ledger as ground truth after the sink under test has
exited. A request the sink sent may still be executing then (a behaviour that holds a request in
progress, a slow upload, a request the proxy released after its client died): read too early,
the ledger misses an effect the receiver is about to apply, and a duplicate could go unseen. The
judge waits until this count is zero (bounded) and treats a count that never reaches zero as a gap
in its evidence, never as a valid history.

Counted: every HTTP request of the data API from the moment it enters the application until the
application has returned for it (response sent, or the client gone and the handler done).
Admin requests are not counted.
"""

from __future__ import annotations

from typing import Protocol

from starlette.types import ASGIApp, Receive, Scope, Send

from mock_receiver.host_guard import is_admin_path


class InFlightSink(Protocol):
    data_requests_in_flight: int


class InFlightMiddleware:
    def __init__(self, app: ASGIApp, counter: InFlightSink) -> None:
        self.app = app
        self.counter = counter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or is_admin_path(path):
            await self.app(scope, receive, send)
            return
        # One event loop runs the application: the count needs no lock.
        self.counter.data_requests_in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.counter.data_requests_in_flight -= 1
