"""Size and time bounds of both listeners, below and above the ASGI application.

uvicorn bounds neither the time a request head may take nor how long a body may trickle: its
keep-alive timer starts only after a response and is cancelled by the first byte of the next request,
so a client sending one header byte every few seconds (or a chunk size of 2**80 and then nothing)
holds its connection, and its handler, forever. Two parts close that:

* :func:`bounded_protocol` subclasses uvicorn's HTTP protocol (h11 or httptools): a connection that
  is waiting for a request head (just opened, or after its previous response) must complete the head
  within ``header_timeout`` and within ``max_head_bytes``; otherwise it gets ``408 head_timeout`` or
  ``431 head_too_large`` (problem+json, then the connection is closed; a connection that sent nothing
  is closed silently). The rest of a body the application answered without reading is dropped by
  uvicorn as it arrives; it may pause at most ``body_idle_timeout`` and last at most ``body_timeout``
  after the answer, then the connection is closed (not at once: a client still sending would see a
  reset instead of the answer it was given).
* :class:`BodyDeadlines` wraps ``receive``: while a body is incomplete, each wait for more of it may
  last ``body_idle_timeout`` and all the waits together ``body_timeout``; past either, ``receive``
  raises :class:`BodyTimeout`, which the body readers turn into ``408 body_timeout`` (logged in the
  request log like any refused request; nothing is applied) and the connection is closed.

The size of a body is bounded where it is read (the behaviour's ``max_body_bytes`` on the data API,
the admin bodies' own bounds): bytes are counted as they arrive, whatever a chunk header announced.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import anyio
import h11
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_receiver.problems import PROBLEM_MEDIA_TYPE, ProblemError

_TYPE_PREFIX = "urn:restproof:mock-receiver:problem:"


@dataclass(frozen=True)
class ListenerBounds:
    header_timeout: float = 10.0
    """Seconds a request head may take, from the connection's start or its previous response."""
    body_idle_timeout: float = 30.0
    """Seconds a body may send nothing."""
    body_timeout: float = 300.0
    """Seconds a body may take in all (time the receiver spent waiting for it)."""
    max_head_bytes: int = 65_536
    """Bytes of one request head (h11 already refuses a head above 16 KiB with its own 400)."""


class BodyTimeout(Exception):
    """The client stopped sending its body (or sent it too slowly)."""


def body_timeout_problem() -> ProblemError:
    return ProblemError(408, "body_timeout", "Request timeout", "the request body did not arrive in time",
                        headers={"Connection": "close"})


def _raw_problem(status: int, reason: str, slug: str, detail: str) -> bytes:
    title = reason[0] + reason[1:].lower()
    body = json.dumps({"type": _TYPE_PREFIX + slug, "title": title, "status": status, "detail": detail},
                      separators=(",", ":")).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: {PROBLEM_MEDIA_TYPE}\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")
    return head.encode("ascii") + body


def bounded_protocol(base: type[asyncio.Protocol], bounds: ListenerBounds) -> type[asyncio.Protocol]:
    """A subclass of uvicorn's protocol class ``base`` that bounds each request head in time and size."""

    class BoundedProtocol(base):  # type: ignore[valid-type,misc]
        # uvicorn's protocol attributes used here (both implementations have them)
        loop: asyncio.AbstractEventLoop
        transport: asyncio.Transport
        cycle: Any

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self._seen_cycle: Any = None
            self._head_timer: asyncio.TimerHandle | None = None
            self._discard_started = 0.0
            self._await_head()

        def data_received(self, data: bytes) -> None:
            was_discarding = self._head_timer is not None and self._discarding()
            if self._head_timer is not None and not was_discarding:
                self._head_bytes += len(data)
            super().data_received(data)
            self._note_new_head()
            if self._head_timer is None or self.transport.is_closing():
                return
            if self._discarding():
                self._keep_discarding()
            elif was_discarding:
                self._await_head()  # the unread body ended: a new head starts now
            elif self._head_bytes > bounds.max_head_bytes:
                self._refuse(431, "Request Header Fields Too Large", "head_too_large",
                             f"a request head may be at most {bounds.max_head_bytes} bytes")

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._note_new_head()  # a pipelined request may have started already
            if self.cycle is self._seen_cycle and not self.transport.is_closing():
                self._await_head()
                if self._discarding():
                    self._discard_started = self.loop.time()
                    self._keep_discarding()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_head_timer()
            super().connection_lost(exc)

        def _discarding(self) -> bool:
            """The answer is out but the request's body is still arriving (uvicorn drops it)."""
            conn = getattr(self, "conn", None)  # h11's connection state, where there is one
            if conn is not None:
                return bool(conn.their_state is h11.SEND_BODY)
            return self.cycle is not None and bool(getattr(self.cycle, "more_body", False))

        def _keep_discarding(self) -> None:
            """The rest of a body nobody reads is dropped while it keeps coming (body bounds: idle, total)."""
            self._stop_head_timer()
            if self.loop.time() - self._discard_started > bounds.body_timeout:
                self.transport.close()
                return
            self._head_timer = self.loop.call_later(bounds.body_idle_timeout, self._head_timed_out)

        def _await_head(self) -> None:
            self._stop_head_timer()
            self._head_bytes = 0
            self._head_timer = self.loop.call_later(bounds.header_timeout, self._head_timed_out)

        def _stop_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _note_new_head(self) -> None:
            if self.cycle is not None and self.cycle is not self._seen_cycle:
                self._seen_cycle = self.cycle
                self._stop_head_timer()

        def _head_timed_out(self) -> None:
            self._head_timer = None
            self._refuse(408, "Request Timeout", "head_timeout",
                         f"the request head did not arrive within {bounds.header_timeout:g} seconds")

        def _refuse(self, status: int, reason: str, slug: str, detail: str) -> None:
            self._stop_head_timer()
            if self.transport.is_closing():
                return
            # Bytes of a new head get an answer; an idle connection, or the rest of a body the
            # previous answer already refused, is just closed.
            if self._head_bytes and not self._discarding():
                self.transport.write(_raw_problem(status, reason, slug, detail))
            self.transport.close()

    BoundedProtocol.__name__ = f"Bounded{base.__name__}"
    BoundedProtocol.__qualname__ = BoundedProtocol.__name__
    return BoundedProtocol


class BodyDeadlines:
    """Bounds the time a request body may take (see the module docstring)."""

    def __init__(self, app: ASGIApp, bounds: ListenerBounds) -> None:
        self.app = app
        self.bounds = bounds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        bounds = self.bounds
        waited = 0.0
        finished = False

        async def bounded_receive() -> Message:
            nonlocal waited, finished
            if finished:  # the body is complete (or timed out): waiting for a disconnect is not bounded
                return await receive()
            allowance = min(bounds.body_idle_timeout, bounds.body_timeout - waited)
            started = anyio.current_time()
            try:
                with anyio.fail_after(max(allowance, 0.0)):
                    message = await receive()
            except TimeoutError:
                finished = True
                raise BodyTimeout from None
            finally:
                waited += anyio.current_time() - started
            finished = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        await self.app(scope, bounded_receive, send)
