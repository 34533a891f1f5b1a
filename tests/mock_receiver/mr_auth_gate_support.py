"""Driving the receiver's auth middleware as an ASGI server would, without a server: one request scope
in, the answer (or the fact that the request reached the application) out. Shared by the auth kill
tests (tests/mock_receiver/test_mr_auth_kills*.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mr_support import behaviour_with

from mock_receiver.auth import AuthGate, AuthMiddleware
from mock_receiver.behaviour import Behaviour

DATA_PATH = "/mock/v1/resources/measurements/batches"
_BEHAVIOURS: dict[int, Behaviour] = {}


def _behaviour(max_body_bytes: int) -> Behaviour:
    if max_body_bytes not in _BEHAVIOURS:
        _BEHAVIOURS[max_body_bytes] = behaviour_with("dataset-jobs", limits={"max_body_bytes": max_body_bytes})
    return _BEHAVIOURS[max_body_bytes]


class GateHolder:
    """What the middleware reads per request (the receiver): the gate and the active behaviour."""

    def __init__(self, gate: AuthGate, max_body_bytes: int = 16_000) -> None:
        self.auth = gate
        self.behaviour = _behaviour(max_body_bytes)


@dataclass
class Answer:
    reached: bool
    """The request got through to the application."""
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    problem: dict[str, Any] = field(default_factory=dict)
    body_messages_read: int = 0


def peer(common_name: str | None, *alt: tuple[str, str]) -> dict[str, object]:
    """The ASGI TLS extension of a connection with a verified client certificate (tls_peer.py's shape)."""
    subject: tuple[Any, ...] = ((("countryName", "ZZ"),),)
    if common_name is not None:
        subject += ((("commonName", common_name),),)
    return {"client_cert_chain": ["-----BEGIN CERTIFICATE-----"],
            "client_cert_dict": {"subject": subject, "subjectAltName": alt}}


def ask(gate: AuthGate, headers: Sequence[tuple[str, str]] = (), *, tls: object = None, path: str = DATA_PATH,
        scope_type: str = "http", extensions: dict[str, object] | None = None,
        body: Sequence[dict[str, object]] | None = None, max_body_bytes: int = 16_000) -> Answer:
    """One request through AuthMiddleware; ``body`` is the receive() messages (default: one empty one)."""
    reached: list[str] = []
    sent: list[dict[str, Any]] = []
    messages = list(body) if body is not None else [{"type": "http.request", "body": b"", "more_body": False}]
    read = 0

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        reached.append(str(scope.get("path")))

    async def receive() -> dict[str, object]:
        nonlocal read
        read += 1
        if read > len(messages):
            raise AssertionError("read past the last message of the request")
        return messages[read - 1]

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope: dict[str, Any] = {"type": scope_type, "method": "POST", "path": path,
                             "headers": [(name.lower().encode("latin-1"), value.encode("latin-1"))
                                         for name, value in headers]}
    if extensions is not None:
        scope["extensions"] = extensions
    elif tls is not None:
        scope["extensions"] = {"tls": tls}
    if scope_type == "lifespan":
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}}
    middleware = AuthMiddleware(app, GateHolder(gate, max_body_bytes))  # type: ignore[arg-type]
    asyncio.run(middleware(scope, receive, send))  # type: ignore[arg-type]
    if reached:
        assert not sent
        return Answer(reached=True, body_messages_read=read)
    start, content = sent[0], sent[1]
    assert start["type"] == "http.response.start" and content["type"] == "http.response.body"
    response_headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in start["headers"]}
    return Answer(reached=False, status=int(start["status"]), headers=response_headers,
                  problem=json.loads(content["body"]), body_messages_read=read)
