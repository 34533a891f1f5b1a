"""Proxies and the registry behind the Toxiproxy-compatible API.

Everything here runs on one asyncio event loop (the API server's), so no locks are needed: an API
handler and a connection's tasks never run at the same time.
"""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

from fault_proxy.tcp.addresses import LOOPBACK, AddressError, join_host_port, split_host_port
from fault_proxy.tcp.connection import Connection, set_no_delay
from fault_proxy.tcp.toxics import (
    Stream,
    ToxicInputError,
    ToxicSpec,
    ToxicType,
    parse_attributes,
)

# Bounds on what one API client can make the server hold. Toxiproxy has none; without them one
# request could make the server bind thousands of sockets or dial itself without end.
MAX_PROXIES = 1000
MAX_TOXICS_PER_PROXY = 100
MAX_CONNECTIONS_PER_PROXY = 512
# Names end up in URL paths (toxiproxy-python and the Go client insert them without encoding), so
# only names that stay one path segment unencoded are accepted: no "/", "?", "#", "%" or space.
_NAME = re.compile(r"[A-Za-z0-9_.~:-]{1,128}")


def check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in (".", ".."):
        raise bad_request(f"bad request body: {what} must be 1-128 characters from A-Z a-z 0-9 _ . ~ : -")
    return name


class ApiError(Exception):
    """An error with the HTTP status and message Toxiproxy would answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


class Randomness:
    """Random sources for toxicity draws, jitter and slicing.

    With a seed, every (proxy, toxic, connection number, toxic generation) gets its own generator
    seeded from those values, so outcomes do not depend on how connections interleave: the n-th
    connection of a proxy sees the same draws in every run with the same seed.
    """

    def __init__(self, seed: int | None) -> None:
        self.seed = seed

    def for_toxic(self, proxy: str, spec: ToxicSpec, sequence: int) -> random.Random:
        if self.seed is None:
            return random.Random()  # seeded from os.urandom
        return random.Random(f"{self.seed}|{proxy}|{spec.name}|{sequence}|{spec.generation}")


class Proxy:
    def __init__(self, name: str, listen: str, upstream: str, randomness: Randomness) -> None:
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = False
        self.toxics: list[ToxicSpec] = []
        self._randomness = randomness
        self._server: asyncio.Server | None = None
        self._connections: set[Connection] = set()
        self._accepted = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "toxics": self.toxics_json(),
        }

    def toxics_json(self) -> list[dict[str, Any]]:
        # Toxiproxy lists the upstream chain first, then the downstream one.
        ordered = [t for t in self.toxics if t.stream is Stream.UPSTREAM]
        ordered += [t for t in self.toxics if t.stream is Stream.DOWNSTREAM]
        return [t.to_json() for t in ordered]

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.enabled:
            return
        host, port = split_host_port(self.listen, default_host=LOOPBACK)
        try:
            self._server = await asyncio.start_server(self._accept, host, port)
        except OSError as exc:
            # Toxiproxy answers 500 here; the address is the client's input, so this is a 400.
            raise ApiError(400, f"listen tcp {join_host_port(host, port)}: {exc.strerror or 'cannot listen'}") from None
        bound = self._server.sockets[0].getsockname()
        if split_host_port(self.upstream) == (host, bound[1]):
            self._server.close()
            self._server = None
            raise bad_request("upstream is the proxy's own listen address: it would dial itself")
        self.listen = join_host_port(host, bound[1])
        self.enabled = True

    async def stop(self) -> None:
        if not self.enabled:
            return
        self.enabled = False
        if self._server is not None:
            self._server.close()
            self._server = None
        for connection in list(self._connections):
            connection.close(False)

    async def update(self, listen: str, upstream: str, enabled: bool) -> None:
        if listen != self.listen or upstream != self.upstream:
            validate_addresses(listen, upstream)
            was_enabled = self.enabled
            await self.stop()
            self.listen, self.upstream = listen, upstream
            if was_enabled and enabled:
                await self.start()
                return
        if enabled and not self.enabled:
            await self.start()
        elif not enabled and self.enabled:
            await self.stop()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sequence = self._accepted
        self._accepted += 1
        if len(self._connections) >= MAX_CONNECTIONS_PER_PROXY:
            writer.close()  # bounds a proxy whose upstream leads back to itself
            return
        set_no_delay(writer)
        host, port = split_host_port(self.upstream)
        try:
            upstream = await asyncio.open_connection(host, port)
        except (OSError, ValueError):
            writer.close()  # Toxiproxy closes the client when the upstream cannot be reached
            return
        if not self.enabled:  # disabled while we were dialling
            upstream[1].close()
            writer.close()
            return
        set_no_delay(upstream[1])
        connection = Connection(
            sequence=sequence,
            client=(reader, writer),
            upstream=upstream,
            chain_source=self._chain,
            random_factory=lambda spec, seq: self._randomness.for_toxic(self.name, spec, seq),
            on_closed=self._connections.discard,
        )
        self._connections.add(connection)
        connection.start()

    def _chain(self, stream: Stream) -> list[ToxicSpec]:
        return [t for t in self.toxics if t.stream is stream]

    def _refresh_connections(self) -> None:
        for connection in list(self._connections):
            connection.sync_toxics()

    # -- toxics -------------------------------------------------------------------------------

    def find_toxic(self, name: str) -> ToxicSpec:
        for toxic in self.toxics:
            if toxic.name == name:
                return toxic
        raise ApiError(404, "toxic not found")

    def add_toxic(self, body: Any) -> ToxicSpec:
        if not isinstance(body, dict):
            raise bad_request("bad request body: expected a JSON object")
        stream_text = body.get("stream", Stream.DOWNSTREAM.value)
        if not isinstance(stream_text, str) or stream_text not in {s.value for s in Stream}:
            raise bad_request("stream was invalid, can be either upstream or downstream")
        stream = Stream(stream_text)
        type_text = body.get("type")
        if not isinstance(type_text, str) or type_text not in {t.value for t in ToxicType}:
            raise bad_request("invalid toxic type")
        name = check_name(body.get("name") or f"{type_text}_{stream.value}", "toxic name")
        toxic_type = ToxicType(type_text)
        if any(t.name == name for t in self.toxics):
            raise ApiError(409, "toxic already exists")
        if len(self.toxics) >= MAX_TOXICS_PER_PROXY:
            raise bad_request(f"bad request body: a proxy holds at most {MAX_TOXICS_PER_PROXY} toxics")
        toxicity = _parse_toxicity(body.get("toxicity", 1.0))
        try:
            attributes = parse_attributes(toxic_type, body.get("attributes"))
        except ToxicInputError as exc:
            raise bad_request(f"bad request body: {exc}") from None
        spec = ToxicSpec(name=name, type=toxic_type, stream=stream, toxicity=toxicity,
                         attributes=attributes)
        self.toxics.append(spec)
        self._refresh_connections()
        return spec

    def update_toxic(self, name: str, body: Any) -> ToxicSpec:
        spec = self.find_toxic(name)
        if not isinstance(body, dict):
            raise bad_request("bad request body: expected a JSON object")
        toxicity = _parse_toxicity(body.get("toxicity", spec.toxicity))
        try:
            attributes = parse_attributes(spec.type, body.get("attributes"), base=spec.attributes)
        except ToxicInputError as exc:
            raise bad_request(f"bad request body: {exc}") from None
        spec.attributes, spec.toxicity = attributes, toxicity
        spec.generation += 1
        self._refresh_connections()
        return spec

    def remove_toxic(self, name: str) -> None:
        spec = self.find_toxic(name)
        self.toxics.remove(spec)
        self._refresh_connections()

    def remove_all_toxics(self) -> None:
        self.toxics.clear()
        self._refresh_connections()


def _parse_toxicity(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_request("bad request body: toxicity must be a number")
    if not 0 <= value <= 1:  # compared before float(): float() of a huge integer overflows
        raise bad_request("bad request body: toxicity must be between 0 and 1")
    return float(value)


def validate_addresses(listen: str, upstream: str) -> None:
    try:
        split_host_port(listen, default_host=LOOPBACK)
        split_host_port(upstream)
    except AddressError as exc:
        raise bad_request(str(exc)) from None


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

    async def create(self, body: Any, *, replace_changed: bool = False) -> Proxy:
        name, listen, upstream, enabled = _parse_proxy_body(body)
        existing = self.proxies.get(name)
        if existing is not None:
            if not replace_changed:
                raise ApiError(409, "proxy already exists")
            if existing.listen == listen and existing.upstream == upstream:
                return existing
            await self.delete(name)
        elif len(self.proxies) >= MAX_PROXIES:
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
        if not isinstance(body, list):
            raise bad_request("bad request body: expected a JSON array of proxies")
        if len(body) > MAX_PROXIES:
            raise bad_request(f"bad request body: at most {MAX_PROXIES} proxies")
        seen: set[str] = set()
        for index, item in enumerate(body, start=1):  # validate everything before changing anything
            name, listen, upstream, _ = _parse_proxy_body(item, position=index)
            if name in seen:
                raise bad_request(f"duplicate proxy name {name}")
            seen.add(name)
            validate_addresses(listen, upstream)
        return [await self.create(item, replace_changed=True) for item in body]

    async def reset(self) -> None:
        """Re-enable every proxy and remove every toxic (Toxiproxy's POST /reset)."""
        for proxy in self.proxies.values():
            await proxy.start()
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
