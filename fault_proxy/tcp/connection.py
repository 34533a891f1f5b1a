"""One proxied TCP connection: two directions, each a reader, a toxic chain and a writer.

Reading and processing are separate tasks joined by a small queue, so a chunk's timestamp is
the moment the proxy read it (latency is measured from there, as in Toxiproxy) and a sleeping
toxic does not stop the proxy from draining the source socket.

How a connection ends:
- source EOF: the EOF passes through the chain (slow_close delays it) and is forwarded as a
  half-close (FIN) to the other side; the connection closes once both directions ended;
- a toxic's CloseConnection: both sockets close, with FIN, or with RST when `reset` is set
  (SO_LINGER 0, so the kernel discards unsent data and answers with a reset);
- a socket error on either side: both sockets are reset, so a reset is never turned into a
  clean end of stream on the other side.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from collections.abc import Callable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING

from fault_proxy.tcp.toxics import (
    Chunk,
    CloseConnection,
    Stream,
    TimeoutAttributes,
    ToxicRuntime,
    ToxicSpec,
)

if TYPE_CHECKING:
    import random

READ_SIZE = 32 * 1024  # Toxiproxy's io.Copy buffer size
QUEUE_CHUNKS = 16  # back-pressure: at most this many chunks read ahead per direction

RandomFactory = Callable[[ToxicSpec, int], "random.Random"]
ChainSource = Callable[[Stream], Sequence[ToxicSpec]]


def set_no_delay(writer: asyncio.StreamWriter) -> None:
    """Disable Nagle, as Go does for every TCP connection, so slices leave as separate segments."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _abort_with_rst(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class Connection:
    """Client <-> proxy <-> upstream, with the proxy's toxics applied per direction."""

    def __init__(
        self,
        *,
        sequence: int,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        chain_source: ChainSource,
        random_factory: RandomFactory,
        on_closed: Callable[[Connection], None],
    ) -> None:
        self.sequence = sequence
        self._client_reader, self._client_writer = client
        self._upstream_reader, self._upstream_writer = upstream
        self._chain_source = chain_source
        self._random_factory = random_factory
        self._on_closed = on_closed
        self._runtimes: dict[str, ToxicRuntime] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._ended: set[Stream] = set()
        self.closed = False

    def start(self) -> None:
        self.sync_toxics()
        up_queue: asyncio.Queue[Chunk | None] = asyncio.Queue(QUEUE_CHUNKS)
        down_queue: asyncio.Queue[Chunk | None] = asyncio.Queue(QUEUE_CHUNKS)
        self._tasks = [
            asyncio.create_task(self._read(self._client_reader, up_queue)),
            asyncio.create_task(self._process(Stream.UPSTREAM, up_queue, self._upstream_writer)),
            asyncio.create_task(self._read(self._upstream_reader, down_queue)),
            asyncio.create_task(self._process(Stream.DOWNSTREAM, down_queue, self._client_writer)),
        ]

    # -- toxics -------------------------------------------------------------------------------

    def sync_toxics(self) -> None:
        """Bring this connection's runtimes in line with the proxy's current toxics."""
        if self.closed:
            return
        specs = {spec.name: spec for stream in Stream for spec in self._chain_source(stream)}
        for name in list(self._runtimes):
            if name not in specs:
                self._drop_runtime(self._runtimes.pop(name))
        for name, spec in specs.items():
            current = self._runtimes.get(name)
            if current is not None and current.generation == spec.generation:
                continue
            if current is not None and current.timer is not None:
                current.timer.cancel()
            rng = self._random_factory(spec, self.sequence)
            runtime = ToxicRuntime(spec=spec, rng=rng, active=rng.random() < spec.toxicity,
                                   generation=spec.generation)
            if current is not None:  # per-connection state survives an update, as in Toxiproxy
                runtime.transmitted = current.transmitted
                runtime.bandwidth_debt = current.bandwidth_debt
            self._runtimes[name] = runtime
            self._arm_timeout(runtime)

    def _arm_timeout(self, runtime: ToxicRuntime) -> None:
        attrs = runtime.spec.attributes
        if runtime.active and isinstance(attrs, TimeoutAttributes) and attrs.timeout > 0:
            loop = asyncio.get_running_loop()
            runtime.timer = loop.call_later(attrs.timeout / 1000.0, self.close, False)

    def _drop_runtime(self, runtime: ToxicRuntime) -> None:
        if runtime.timer is not None:
            runtime.timer.cancel()
        # Removing an active timeout toxic closes what it was holding (Toxiproxy's Cleanup does).
        if runtime.active and isinstance(runtime.spec.attributes, TimeoutAttributes):
            self.close(False)

    def _chain(self, stream: Stream) -> list[ToxicRuntime]:
        self.sync_toxics()
        return [self._runtimes[spec.name] for spec in self._chain_source(stream)
                if spec.name in self._runtimes]

    # -- data flow ----------------------------------------------------------------------------

    async def _read(self, reader: asyncio.StreamReader, queue: asyncio.Queue[Chunk | None]) -> None:
        try:
            while True:
                data = await reader.read(READ_SIZE)
                if not data:
                    await queue.put(None)
                    return
                await queue.put(Chunk(data, time.monotonic()))
        except OSError:
            self.close(True)

    async def _process(self, stream: Stream, queue: asyncio.Queue[Chunk | None],
                       writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                chunk = await queue.get()
                if chunk is None:
                    for runtime in self._chain(stream):
                        await runtime.on_source_closed()
                    self._end_direction(stream, writer)
                    return
                await self._emit(self._chain(stream), 0, chunk, writer)
                if self.closed:  # a toxic change closed us (removing a timeout does)
                    return
        except CloseConnection as signal:
            self.close(signal.reset)
        except OSError:
            self.close(True)

    async def _emit(self, chain: list[ToxicRuntime], index: int, chunk: Chunk,
                    writer: asyncio.StreamWriter) -> None:
        if index == len(chain):
            if chunk.data:
                writer.write(chunk.data)
                await writer.drain()
            return
        async with aclosing(chain[index].handle(chunk)) as outputs:
            async for out in outputs:
                await self._emit(chain, index + 1, out, writer)

    def _end_direction(self, stream: Stream, writer: asyncio.StreamWriter) -> None:
        self._ended.add(stream)
        if len(self._ended) == len(Stream):
            self.close(False)
        elif writer.can_write_eof():
            writer.write_eof()

    # -- teardown -----------------------------------------------------------------------------

    def close(self, reset: bool = False) -> None:
        """End the connection on both sides; FIN by default, RST when `reset`."""
        if self.closed:
            return
        self.closed = True
        for runtime in self._runtimes.values():
            if runtime.timer is not None:
                runtime.timer.cancel()
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        for writer in (self._client_writer, self._upstream_writer):
            if reset:
                _abort_with_rst(writer)
            else:
                writer.close()
        self._on_closed(self)
