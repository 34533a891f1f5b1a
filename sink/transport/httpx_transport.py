"""``HttpxRestTransport``: the ``RestTransportPort`` over a counting httpcore pool.

One instance serves one binding authority. Every send goes to that origin only (the prepared
request carries a relative path); redirects are never followed (a 3xx is a response like any
other), proxies, netrc and cookies play no part, and credential headers are added at the last
moment from the auth seam. Network conditions never raise: they become evidence.

The request goes straight to httpcore, the layer whose trace and network backend give the
evidence. ``httpx.Client`` on top of it only rebuilt each request (header merging, URL parsing,
a cookie jar, its response wrapper): about a third of the client CPU of a small request, and its
import a tenth of a delivering process's start-up (docs/benchmarks.md). The request head is the
one httpx sent (``sink.transport.request_head``), which a test holds against httpx itself.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpcore

from sink.contracts.profile_policy import TimeoutVector
from sink.contracts.transport import PreparedRequest, ResponseBounds, TransportOutcome
from sink.transport.auth import AuthProvider
from sink.transport.body import BodyMismatch, VerifiedBody
from sink.transport.classify import DNS_STEP, classify_failure, received
from sink.transport.dns import BoundedResolver, ResolutionFailed, Resolver, system_resolver
from sink.transport.exchange import CURRENT, Exchange, IoFailure
from sink.transport.network import CountingBackend
from sink.transport.request_head import USER_AGENT, Origin, request_headers, request_target
from sink.transport.response import allowlisted_headers, evidence_for, read_bounded

__all__ = ["USER_AGENT", "HttpxRestTransport"]

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class HttpxRestTransport:
    def __init__(
        self,
        authority: str,
        auth: AuthProvider,
        *,
        ssl_context: ssl.SSLContext | None = None,
        resolver: Resolver = system_resolver,
        max_connections: int = 8,
        # Below the usual 5 s server idle timeout (uvicorn, nginx): a pooled connection the
        # server is about to close turns a harmless request into an unknown effect.
        keepalive_expiry_s: float = 2.0,
        bounds: ResponseBounds | None = None,
        address_allowed: Callable[[str], bool] | None = None,
    ) -> None:
        """``address_allowed``: the network policy's test of a resolved address. A refused address
        is never pinned or connected to; the request fails as ``authority_refused`` before any
        byte (or credential) is sent."""
        parts = urlsplit(authority)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
            raise ValueError("authority must be a bare http(s) origin")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._origin = Origin.of(self._scheme, self._host, self._port)
        self._auth = auth
        self._bounds = bounds or ResponseBounds()
        self._backend = CountingBackend()
        self._dns = BoundedResolver(resolver)
        self._pin_lock = threading.Lock()
        self._pinned: str | None = None
        self._address_allowed = address_allowed
        self._pool = httpcore.ConnectionPool(
            # Without a context, an https origin gets the verifying default; http never builds one.
            ssl_context=ssl_context or (ssl.create_default_context() if parts.scheme == "https" else None),
            max_connections=max_connections,
            keepalive_expiry=keepalive_expiry_s,
            retries=0,
            network_backend=self._backend,
        )

    def __enter__(self) -> HttpxRestTransport:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._pool.close()
        self._dns.close()

    def send(
        self, request: PreparedRequest, *, timeouts: TimeoutVector, bounds: ResponseBounds | None = None,
        observer: Callable[[str], None] | None = None,
    ) -> TransportOutcome:
        exchange = Exchange(timeouts, observer=observer)
        token = CURRENT.set(exchange)
        try:
            return self._send(request, exchange, bounds or self._bounds)
        finally:
            CURRENT.reset(token)

    def _failed(self, exchange: Exchange, *, pool_timeout: bool = False,
                response_status: int | None = None) -> TransportOutcome:
        evidence = classify_failure(
            steps=exchange.steps, failure=exchange.failure, pool_timeout=pool_timeout,
            request_bytes_to_kernel=exchange.bytes_sent, elapsed_ms=exchange.elapsed_ms(),
            resolved_address=exchange.resolved_address, response_status=response_status,
            response_bytes_received=exchange.bytes_received,
        )
        return TransportOutcome(evidence=evidence, response=None)

    def _resolve(self, exchange: Exchange) -> bool:
        with self._pin_lock:
            pinned = self._pinned
        if pinned is None:
            exchange.trace(DNS_STEP + ".started", None)
            seconds, bound = exchange.bound("dns")
            try:
                address = self._dns.resolve(self._host, self._port, seconds)
            except ResolutionFailed as failed:
                exchange.trace(DNS_STEP + ".failed", None)
                if failed.cause == "timeout":
                    exchange.record_failure(IoFailure("dns", "timeout", bound))
                else:
                    exchange.record_failure(IoFailure("dns", "error"))
                return False
            exchange.trace(DNS_STEP + ".complete", None)
            if self._address_allowed is not None and not self._address_allowed(address):
                exchange.resolved_address = address
                exchange.record_failure(IoFailure("authority", "error"))
                return False
            with self._pin_lock:
                if self._pinned is None:
                    self._pinned = address
                    self._backend.pin(self._host, address)
                pinned = self._pinned
        exchange.resolved_address = pinned
        return True

    def _send(self, request: PreparedRequest, exchange: Exchange, bounds: ResponseBounds) -> TransportOutcome:
        target = request_target(request.path_and_query)
        if target is None:
            exchange.record_failure(IoFailure("authority", "error"))
            return self._failed(exchange)
        try:
            credentials = self._auth.credential_headers()
        except Exception:  # CredentialUnavailable, or a provider bug: never a send without proof
            exchange.record_failure(IoFailure("credential", "unavailable"))
            return self._failed(exchange)
        body: VerifiedBody | None = None
        if request.body is not None:
            try:
                body = VerifiedBody(request.body)
            except BodyMismatch:
                exchange.record_failure(IoFailure("body", "unavailable"))
                return self._failed(exchange)
        if not self._resolve(exchange):
            return self._failed(exchange)
        headers: list[tuple[str, str]] = [*request.semantic_headers, ("accept-encoding", "identity")]
        if request.content_type is not None:
            headers.append(("content-type", request.content_type))
        if body is not None or request.method in BODY_METHODS:
            # Always an explicit length for a mutation: never chunked, so the peer can tell a
            # complete body from a cut one; a bodyless read-only poll sends none (RFC 9110 8.6).
            headers.append(("content-length", str(0 if body is None else body.length)))
        headers.extend((name, secret.reveal()) for name, secret in credentials)
        remaining = max(exchange.deadline - time.monotonic(), 0.001)
        core_request = httpcore.Request(
            request.method, self._origin.url(target), headers=request_headers(self._origin, headers),
            content=b"" if body is None else body,
            # Only the pool wait is bounded here; every socket operation gets its bound from the
            # counting backend, which applies the timeout vector.
            extensions={"trace": exchange.trace,
                        "timeout": {"connect": None, "read": None, "write": None, "pool": remaining}},
        )
        try:
            response = self._pool.handle_request(core_request)
        except Exception as exc:  # classified from the trace and the backend's records
            return self._failed(exchange, pool_timeout=isinstance(exc, httpcore.PoolTimeout))
        try:
            # Latin-1 maps every byte: a value that is not visible ASCII is dropped by the
            # allowlist whatever it decodes to.
            raw = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in response.headers]
            kept = allowlisted_headers(raw, request.extract_headers, bounds)
            try:
                data, complete = read_bounded(response.iter_stream(), bounds.max_body_bytes)
            except Exception:
                return self._failed(exchange, response_status=response.status)
        finally:
            response.close()
        evidence = received(steps=exchange.steps, request_bytes_to_kernel=exchange.bytes_sent,
                            elapsed_ms=exchange.elapsed_ms(), resolved_address=exchange.resolved_address,
                            response_bytes_received=exchange.bytes_received)
        response_evidence = evidence_for(status=response.status, headers=kept, body=data, complete=complete,
                                         pointers=request.extract_pointers, bounds=bounds)
        return TransportOutcome(evidence=evidence, response=response_evidence)
