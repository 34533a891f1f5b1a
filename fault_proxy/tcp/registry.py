"""The registry of proxies behind the Toxiproxy-compatible API: create, update, populate, reset.

Every state-changing call validates its whole input and binds every listener it needs before it
changes anything. A call that is refused (400, 404, 409) leaves every proxy, listener, connection
and toxic as it was; Toxiproxy itself can leave a proxy half-changed (a PATCH that fails to bind
the new address has already closed the old one).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fault_proxy.tcp.addresses import LOOPBACK
from fault_proxy.tcp.engine import (
    MAX_PROXIES,
    ApiError,
    Proxy,
    Randomness,
    bad_request,
    check_name,
    validate_addresses,
)


class ProxyRegistry:
    """All proxies of one server, by name."""

    def __init__(self, seed: int | None = None) -> None:
        self.randomness = Randomness(seed)
        self.proxies: dict[str, Proxy] = {}

    def get(self, name: str) -> Proxy:
        proxy = self.proxies.get(name)
        if proxy is None:
            raise ApiError(404, "proxy not found")
        return proxy

    async def create(self, body: Any) -> Proxy:
        name, listen, upstream, enabled = _parse_proxy_body(body)
        if name in self.proxies:
            raise ApiError(409, "proxy already exists")
        if len(self.proxies) >= MAX_PROXIES:
            raise bad_request(f"bad request body: at most {MAX_PROXIES} proxies")
        proxy = Proxy(name, listen, upstream, self.randomness)
        if enabled:
            await proxy.start()
        self.proxies[name] = proxy
        return proxy

    async def update(self, name: str, body: Any) -> Proxy:
        proxy = self.get(name)
        if not isinstance(body, dict):
            raise bad_request("bad request body: expected a JSON object")
        listen = body.get("listen", proxy.listen)
        upstream = body.get("upstream", proxy.upstream)
        enabled = body.get("enabled", proxy.enabled)
        if not isinstance(listen, str) or not isinstance(upstream, str) or not isinstance(enabled, bool):
            raise bad_request("bad request body: listen/upstream must be strings, enabled a boolean")
        await proxy.update(listen, upstream, enabled)
        return proxy

    async def delete(self, name: str) -> None:
        proxy = self.get(name)
        await proxy.stop()
        del self.proxies[name]

    async def populate(self, body: Any) -> list[Proxy]:
        """Create or replace every proxy of ``body`` (Toxiproxy's POST /populate), all or nothing.

        Every entry is validated and every new listener bound before anything changes; when one
        cannot be bound, the listeners bound so far are closed and the registry is as it was.
        """
        if not isinstance(body, list):
            raise bad_request("bad request body: expected a JSON array of proxies")
        if len(body) > MAX_PROXIES:
            raise bad_request(f"bad request body: at most {MAX_PROXIES} proxies")
        entries = [_parse_proxy_body(item, position=index) for index, item in enumerate(body, start=1)]
        names = [name for name, *_ in entries]
        if len(set(names)) != len(names):
            raise bad_request("duplicate proxy name in the populate body")
        if len(self.proxies) + len(set(names) - set(self.proxies)) > MAX_PROXIES:
            raise bad_request(f"bad request body: at most {MAX_PROXIES} proxies")
        plan: list[tuple[Proxy, tuple[asyncio.Server, str] | None]] = []
        try:
            for name, listen, upstream, enabled in entries:
                existing = self.proxies.get(name)
                if existing is not None and (existing.listen, existing.upstream) == (listen, upstream):
                    continue  # unchanged: kept with its connections
                fresh = Proxy(name, listen, upstream, self.randomness)
                plan.append((fresh, await fresh.listen_on(listen, upstream) if enabled else None))
        except ApiError:
            for _, bound in plan:
                if bound is not None:
                    bound[0].close()
            raise
        for fresh, bound in plan:
            if fresh.name in self.proxies:
                await self.delete(fresh.name)
            if bound is not None:
                fresh.adopt(*bound)
            self.proxies[fresh.name] = fresh
        return [self.proxies[name] for name in names]

    async def reset(self) -> None:
        """Re-enable every proxy and remove every toxic (Toxiproxy's POST /reset), all or nothing:
        a disabled proxy whose address cannot be bound any more makes it a 400 that changes nothing."""
        bound: list[tuple[Proxy, tuple[asyncio.Server, str]]] = []
        try:
            for proxy in self.proxies.values():
                if not proxy.enabled:
                    bound.append((proxy, await proxy.listen_on(proxy.listen, proxy.upstream)))
        except ApiError:
            for _, (server, _) in bound:
                server.close()
            raise
        for proxy, listener in bound:
            proxy.adopt(*listener)
        for proxy in self.proxies.values():
            proxy.remove_all_toxics()

    async def close_all(self) -> None:
        for proxy in list(self.proxies.values()):
            await proxy.stop()


def _parse_proxy_body(body: Any, position: int | None = None) -> tuple[str, str, str, bool]:
    where = f" at proxy {position}" if position is not None else ""
    if not isinstance(body, dict):
        raise bad_request(f"bad request body{where}: expected a JSON object")
    name = body.get("name", "")
    upstream = body.get("upstream", "")
    listen = body.get("listen") or f"{LOOPBACK}:0"
    enabled = body.get("enabled", True)
    if enabled is None:
        enabled = True
    if not isinstance(name, str) or not name:
        raise bad_request(f"missing required field: name{where}")
    check_name(name, f"proxy name{where}")
    if not isinstance(upstream, str) or not upstream:
        raise bad_request(f"missing required field: upstream{where}")
    if not isinstance(listen, str) or not isinstance(enabled, bool):
        raise bad_request(f"bad request body{where}: listen must be a string, enabled a boolean")
    validate_addresses(listen, upstream)
    return name, listen, upstream, enabled
