"""Proxies behind the Toxiproxy-compatible API (the registry of them: ``fault_proxy.tcp.registry``).

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
        if not self.enabled:
            self.adopt(*await self.listen_on(self.listen, self.upstream))

    async def listen_on(self, listen: str, upstream: str) -> tuple[asyncio.Server, str]:
        """A listener for ``listen`` (port 0 resolved) and that address; changes nothing of the proxy.

        Raises ApiError 400 when the address cannot be bound or the upstream is the listener itself.
        """
        host, port = split_host_port(listen, default_host=LOOPBACK)
        try:
            server = await asyncio.start_server(self._accept, host, port)
        except OSError as exc:
            # Toxiproxy answers 500 here; the address is the client's input, so this is a 400.
            raise ApiError(400, f"listen tcp {join_host_port(host, port)}: {exc.strerror or 'cannot listen'}") from None
        bound = server.sockets[0].getsockname()
        if split_host_port(upstream) == (host, bound[1]):
            server.close()
            raise bad_request("upstream is the proxy's own listen address: it would dial itself")
        return server, join_host_port(host, bound[1])

    def adopt(self, server: asyncio.Server, listen: str) -> None:
        self._server, self.listen, self.enabled = server, listen, True

    async def stop(self) -> None:
        if not self.enabled:
            return
        self.enabled = False
        if self._server is not None:
            self._server.close()
            self._server = None
        self._close_connections()

    def _close_connections(self) -> None:
        for connection in list(self._connections):
            connection.close(False)

    async def update(self, listen: str, upstream: str, enabled: bool) -> None:
        """Validate, bind what is new, and only then change anything (a refused update changes nothing)."""
        validate_addresses(listen, upstream)
        if not enabled:
            await self.stop()
            self.listen, self.upstream = listen, upstream
        elif self.enabled and listen == self.listen:
            self.retarget(upstream)
        elif listen != self.listen or upstream != self.upstream or not self.enabled:
            server, resolved = await self.listen_on(listen, upstream)  # raises before any change
            await self.stop()
            self.upstream = upstream
            self.adopt(server, resolved)

    def retarget(self, upstream: str) -> None:
        """A new upstream behind the same listener; open connections end, as a restart would end them."""
        if upstream == self.upstream:
            return
        if split_host_port(upstream) == split_host_port(self.listen, default_host=LOOPBACK):
            raise bad_request("upstream is the proxy's own listen address: it would dial itself")
        self.upstream = upstream
        self._close_connections()

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
