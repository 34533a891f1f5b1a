"""Read-only receipt polls from the triggerer's event loop: GET or HEAD to the binding's authority.

The same security decisions as the synchronous transport, made by the same code: the binding's TLS
and network policies (``PolicyStore``), its auth provider (``auth_for``, resolved on a worker
thread because a provider may read a file or fetch an OAuth token), the address allowlist checked
on the address this module resolved itself and then connects to (no second resolution), no
redirects, no proxy from the environment, bounded response parsing (``evidence_for``). The wire is
httpcore's asynchronous pool; nothing here blocks the loop. A mutation method is refused before
anything is opened: a trigger never mutates the receiver.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpcore

from sink.contracts.plan import CompiledPlan
from sink.contracts.transport import PreparedRequest, ResponseBounds, TransportOutcome
from sink.security.policies import PolicyStore
from sink.security.wire import open_binding_transport
from sink.transport import default_registry
from sink.transport.auth import AuthProvider
from sink.transport.auth_methods import MtlsAuth
from sink.transport.classify import DNS_STEP, classify_failure, received
from sink.transport.exchange import Bound, IoFailure, Operation
from sink.transport.response import allowlisted_headers, evidence_for
from sink.transport.tls import client_context

READ_ONLY_METHODS = frozenset({"GET", "HEAD"})
USER_AGENT = "restproof-sink-trigger"


class MutationRefused(ValueError):
    """A trigger was asked to send something other than GET or HEAD."""


@dataclass(slots=True)
class _Wire:
    steps: list[str] = field(default_factory=list)
    sent: int = 0
    received: int = 0
    failure: IoFailure | None = None

    async def trace(self, event: str, info: object) -> None:
        self.steps.append(event)  # the name only: ``info`` may hold the request


class _CountingStream(httpcore.AsyncNetworkStream):
    def __init__(self, stream: httpcore.AsyncNetworkStream, wire: _Wire) -> None:
        self._stream, self._wire = stream, wire

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._stream.read(max_bytes, timeout)
        self._wire.received += len(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, timeout)
        self._wire.sent += len(buffer)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _CountingStream(await self._stream.start_tls(ssl_context, server_hostname, timeout), self._wire)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects to the address resolved and allowed by the poller, never resolving again."""

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()
        self.address: str | None = None
        self.wire = _Wire()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        target = self.address or host
        stream = await self._inner.connect_tcp(target, port, timeout, local_address, socket_options)
        return _CountingStream(stream, self.wire)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _failure(exc: BaseException) -> IoFailure:
    table: list[tuple[type[BaseException], Operation, Any, Bound | None]] = [
        (httpcore.ConnectTimeout, "connect", "timeout", "connect"),
        (httpcore.ConnectError, "connect", "error", None),
        (httpcore.WriteTimeout, "write", "timeout", "write"),
        (httpcore.WriteError, "write", "error", None),
        (httpcore.ReadTimeout, "read", "timeout", "read"),
        (httpcore.ReadError, "read", "error", None),
        (httpcore.RemoteProtocolError, "read", "eof", None),
        (TimeoutError, "read", "timeout", "total"),
    ]
    for kind, operation, cause, bound in table:
        if isinstance(exc, kind):
            return IoFailure(operation, cause, bound)
    return IoFailure("read", "error")


class AsyncReceiptPoller:
    """One binding's read-only poller; open it with ``await AsyncReceiptPoller.open(plan)``."""

    def __init__(self, plan: CompiledPlan, auth: AuthProvider, allows: Any, context: ssl.SSLContext, *,
                 bounds: ResponseBounds | None = None, total_timeout_s: float | None = None) -> None:
        parts = urlsplit(plan.binding.authority_origin)
        self._scheme, self._host = parts.scheme, parts.hostname or ""
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._timeouts = plan.operation.timeouts
        self._total_s = min(self._timeouts.request_total_ms / 1000.0, total_timeout_s or float("inf"))
        self._auth, self._allows, self._bounds = auth, allows, bounds or ResponseBounds()
        self._backend = _PinnedBackend()
        self._pool = httpcore.AsyncConnectionPool(ssl_context=context, max_connections=1, retries=0,
                                                  keepalive_expiry=2.0, network_backend=self._backend)

    @classmethod
    async def open(cls, plan: CompiledPlan, *, total_timeout_s: float | None = None) -> AsyncReceiptPoller:
        def build() -> AsyncReceiptPoller:
            # The synchronous builder makes every refusal (unknown policy, unusable auth) exactly
            # as the worker would; its blocking client is closed unused.
            wire = open_binding_transport(plan.binding, timeouts=plan.operation.timeouts,
                                          policies=PolicyStore.from_environ(os.environ), resolver=default_registry())
            wire.close()
            tls = PolicyStore.from_environ(os.environ).tls(plan.binding.tls_policy_ref)
            context = client_context(tls, wire.auth if isinstance(wire.auth, MtlsAuth) else None)
            return cls(plan, wire.auth, wire.network.allows, context, total_timeout_s=total_timeout_s)

        return await asyncio.to_thread(build)

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def _resolve(self, wire: _Wire) -> bool:
        wire.steps.append(DNS_STEP + ".started")
        try:
            infos = await asyncio.wait_for(
                asyncio.get_running_loop().getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM),
                self._timeouts.dns_ms / 1000.0)
        except TimeoutError:
            wire.failure = IoFailure("dns", "timeout", "dns")
            return False
        except OSError:
            wire.failure = IoFailure("dns", "error")
            return False
        wire.steps.append(DNS_STEP + ".complete")
        address = str(infos[0][4][0]) if infos else ""
        if not address or not self._allows(address):
            wire.failure = IoFailure("authority", "error")
            return False
        self._backend.address = address
        return True

    async def get(self, request: PreparedRequest) -> TransportOutcome:
        if request.method not in READ_ONLY_METHODS or request.body is not None:
            raise MutationRefused(f"a trigger sends GET or HEAD only, never {request.method[:10]}")
        started = time.monotonic()
        wire = _Wire()
        self._backend.wire = wire
        try:
            credentials = await asyncio.to_thread(self._auth.credential_headers)
        except Exception:  # CredentialUnavailable, or a provider bug: never a request without its credential
            wire.failure = IoFailure("credential", "unavailable")
            return self._failed(wire, started)
        if not await self._resolve(wire):
            return self._failed(wire, started)
        headers = [(b"host", self._host_header().encode()), (b"user-agent", USER_AGENT.encode()),
                   (b"accept-encoding", b"identity"),
                   *((name.encode(), value.encode()) for name, value in request.semantic_headers),
                   *((name.encode(), secret.reveal().encode()) for name, secret in credentials)]
        t = self._timeouts
        extensions = {"trace": wire.trace, "timeout": {"connect": t.connect_ms / 1000, "read": t.read_ms / 1000,
                                                        "write": t.write_ms / 1000, "pool": t.connect_ms / 1000}}
        url = httpcore.URL(scheme=self._scheme.encode(), host=self._host.encode(), port=self._port,
                           target=request.path_and_query.encode("ascii"))
        try:
            async with asyncio.timeout(self._total_s):
                response = await self._pool.handle_async_request(
                    httpcore.Request(request.method.encode(), url, headers=headers, extensions=extensions))
                try:
                    data, complete = await self._read(response)
                finally:
                    await response.aclose()
        except Exception as exc:  # classified from the trace and the byte counts, never re-raised
            wire.failure = wire.failure or _failure(exc)
            return self._failed(wire, started, pool_timeout=isinstance(exc, httpcore.PoolTimeout))
        kept = allowlisted_headers(((k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers),
                                   request.extract_headers, self._bounds)
        evidence = received(steps=wire.steps, request_bytes_to_kernel=wire.sent, elapsed_ms=_ms(started),
                            resolved_address=self._backend.address, response_bytes_received=wire.received)
        return TransportOutcome(evidence=evidence, response=evidence_for(
            status=response.status, headers=kept, body=data, complete=complete, pointers=request.extract_pointers,
            bounds=self._bounds))

    async def _read(self, response: httpcore.Response) -> tuple[bytes, bool]:
        buffer = bytearray()
        async for chunk in response.aiter_stream():
            buffer += chunk
            if len(buffer) > self._bounds.max_body_bytes:
                return bytes(buffer), False
        return bytes(buffer), True

    def _host_header(self) -> str:
        default = 443 if self._scheme == "https" else 80
        return self._host if self._port == default else f"{self._host}:{self._port}"

    def _failed(self, wire: _Wire, started: float, *, pool_timeout: bool = False) -> TransportOutcome:
        return TransportOutcome(evidence=classify_failure(
            steps=wire.steps, failure=wire.failure, pool_timeout=pool_timeout, request_bytes_to_kernel=wire.sent,
            elapsed_ms=_ms(started), resolved_address=self._backend.address, response_bytes_received=wire.received),
            response=None)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
