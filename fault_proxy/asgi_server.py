"""uvicorn as both API servers run it: no signal handling of its own, and bounded request heads.

uvicorn's ``Server.capture_signals`` re-raises a captured SIGTERM after shutting down, so the
process would die by the signal (exit status 143) instead of exiting 0. The processes here own
SIGINT/SIGTERM themselves and stop uvicorn through ``should_exit``.

uvicorn bounds the size of a request head (h11's incomplete-event limit) but not the time it takes
to arrive: a client that connects and sends nothing, or half a head, holds its connection for as
long as it likes. ``BoundedH11Protocol`` gives every head ``HEAD_TIMEOUT_S`` from the moment the
connection opens or the head's first byte arrives (an idle keep-alive connection is closed by
uvicorn's own keep-alive timeout before that). The body's bound is the guard middleware's
(``fault_proxy.api_guards``), which can still answer through the application.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import h11
import uvicorn
from starlette.responses import Response
from uvicorn.protocols.http.h11_impl import H11Protocol

from fault_proxy.api_guards import Render
from fault_proxy.log_setup import log_config

HEAD_TIMEOUT_S = 10.0
MAX_HEAD_BYTES = 16 * 1024  # h11's limit on an incomplete head (uvicorn's default, stated here)
KEEP_ALIVE_S = 5.0


class NoSignalServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head (see the module docstring)."""

    timeout_answer = b""  # set per API by bounded_h11(): the raw 408 it answers with
    bad_request_answer = b""  # and the raw 400 for a request h11 cannot parse (uvicorn's is plain text)
    _head_deadline: asyncio.TimerHandle | None = None
    _head_started = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            self._head_started = True
            self._arm_head_deadline()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is complete
            self._disarm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        del msg  # uvicorn's fixed text; the answer is the API's own error document
        self.transport.write(self.bad_request_answer)
        self.transport.close()

    def _arm_head_deadline(self) -> None:
        if self._head_deadline is None:
            self._head_deadline = self.loop.call_later(HEAD_TIMEOUT_S, self._head_timed_out)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
        self._head_deadline = None
        self._head_started = False

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self._head_started and self.conn.our_state is h11.IDLE:
            self.transport.write(self.timeout_answer)  # written raw: h11 has no request to answer yet
        self.transport.close()


def raw_answer(response: Response) -> bytes:
    """A whole HTTP/1.1 response as bytes, closing the connection."""
    head = [b"HTTP/1.1 %d %s" % (response.status_code, HTTPStatus(response.status_code).phrase.encode())]
    head += [name + b": " + value for name, value in response.raw_headers if name.lower() != b"connection"]
    head.append(b"connection: close")
    return b"\r\n".join(head) + b"\r\n\r\n" + bytes(response.body)


def bounded_h11(render: Render) -> type[BoundedH11Protocol]:
    """The protocol class for one API: its 408 rendered in that API's own error shape."""
    timeout = raw_answer(render(408, "timeout", f"the request head did not arrive within {HEAD_TIMEOUT_S:g} s"))
    bad = raw_answer(render(400, "invalid-input", "the request is not valid HTTP/1.1"))
    return type("BoundedH11Protocol", (BoundedH11Protocol,), {"timeout_answer": timeout, "bad_request_answer": bad})


def api_config(app: Any, render: Render, log_level: str) -> uvicorn.Config:
    """uvicorn settings shared by both APIs (sockets are bound by the caller)."""
    return uvicorn.Config(
        app, http=bounded_h11(render), h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        timeout_keep_alive=int(KEEP_ALIVE_S), log_config=log_config(log_level), log_level=log_level,
        access_log=False, lifespan="off", server_header=False,
    )
