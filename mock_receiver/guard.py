"""Outermost ASGI wrapper: an unexpected exception never reaches the ASGI server as a traceback.

Starlette's error middleware answers an unhandled exception with the app's 500 problem handler and
then re-raises it, and uvicorn logs the re-raised exception with its traceback. This wrapper swallows
it after one log line naming only the exception class (no payload, no traceback), and answers the
500 problem itself if nothing was sent yet. A 500 is still a receiver bug (the hostile-input suite
fails on it); the wrapper only keeps the log one line per bug and the process serving.
"""

from __future__ import annotations

import json
import logging

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_receiver.listener_bounds import BodyTimeout, body_timeout_problem
from mock_receiver.problems import PROBLEM_MEDIA_TYPE

_LOG = logging.getLogger("mock_receiver")
_INTERNAL = json.dumps({"type": "urn:restproof:mock-receiver:problem:internal_error", "title": "Internal error",
                        "status": 500}, separators=(",", ":")).encode()


class NoTracebacks:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except ClientDisconnect:
            return  # the client is gone: there is nobody to answer and nothing to report
        except BodyTimeout:  # a body read outside the handlers (a refusal draining it) took too long
            if not started:
                await body_timeout_problem().response()(scope, _nothing, send)
            return
        except Exception as error:  # the point of this wrapper
            _LOG.error("mock-receiver: internal error %s on %s", error.__class__.__name__, _route(scope))
            if not started:
                await _answer_500(send)


async def _nothing() -> Message:
    return {"type": "http.disconnect"}


def _route(scope: Scope) -> str:
    path = str(scope.get("path", ""))
    return f"{scope.get('method', '?')} {path[:80]}"


async def _answer_500(send: Send) -> None:
    try:
        await send({"type": "http.response.start", "status": 500,
                    "headers": [(b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                                (b"content-length", str(len(_INTERNAL)).encode())]})
        await send({"type": "http.response.body", "body": _INTERNAL})
    except Exception:  # the connection may be gone as well
        return
