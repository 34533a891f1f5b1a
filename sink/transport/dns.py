"""Bounded name resolution: the ``dns_ms`` bound of the timeout vector and a known address.

``getaddrinfo`` cannot be interrupted, so it runs on a worker thread that the caller stops
waiting for after the bound; a stuck lookup then costs one parked thread, never a request
beyond its bound. The first address that resolves is pinned for the life of the transport: a
later answer pointing elsewhere (DNS rebinding) can not move an authority mid-delivery.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

Resolver = Callable[[str, int], str]
"""(host, port) → one IP address; raises ``OSError`` when the name does not resolve."""


class ResolutionFailed(Exception):
    def __init__(self, cause: str) -> None:
        super().__init__(f"name resolution failed: {cause}")
        self.cause = cause  # "timeout" or "error"


def system_resolver(host: str, port: int) -> str:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    if not infos:
        raise OSError("no address")
    address = infos[0][4][0]
    return str(address)


def literal_address(host: str) -> str | None:
    """The host itself when it is an IP literal (no lookup needed)."""
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


class BoundedResolver:
    def __init__(self, resolver: Resolver = system_resolver, *, max_parked_lookups: int = 4) -> None:
        self._resolver = resolver
        self._pool = ThreadPoolExecutor(max_workers=max_parked_lookups, thread_name_prefix="restproof-dns")

    def resolve(self, host: str, port: int, timeout_s: float) -> str:
        literal = literal_address(host)
        if literal is not None:
            return literal
        if timeout_s <= 0:
            raise ResolutionFailed("timeout")
        future: Future[str] = self._pool.submit(self._resolver, host, port)
        try:
            address = future.result(timeout=timeout_s)
        except FutureTimeout:
            future.cancel()
            raise ResolutionFailed("timeout") from None
        except OSError:
            raise ResolutionFailed("error") from None
        if literal_address(address) is None:
            raise ResolutionFailed("error")
        return address

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
