"""The harness's own witness of what left the sink: a TCP relay in front of the fault proxy.

The fault proxy logs what it read; a request it cut at its head never had its body read, and one it
refused at ``connect`` was never read at all, although the sink's bytes did leave the sink. The tap
relays every connection byte for byte to the proxy and keeps, per connection, everything the client
sent (the original bytes, framed into requests by ``certification.http_framing``), the time each chunk
arrived, and the address the proxy sees, so each request can be matched with the proxy's log entry
and the receiver's ledger. Half-closes are passed on; a reset from either side is passed on as a
reset (SO_LINGER 0), so the sink meets the fault the proxy chose.

Targeting: a row whose fault targets one day of the scope installs a ``Marker`` predicate. The tap
holds a request until the predicate can decide (its head, or for a body-scoped request its whole
body, at most MAX_HELD_BODY bytes), and adds ``X-Restproof-Target: 1`` to the head of every request
it selects; the proxy rule matches that header. The recorded bytes are always the sink's own.

Stalling: ``stall()`` stops accepting and fills the listen queue, so the kernel drops every further
SYN and a sink's connect hangs until its own connect timeout, on the very address its binding names
(a closed port would refuse at once, another address would change the sink's identity); ``resume()``
accepts again. A filler is known by its source port only until it is accepted (or, never established,
until ``resume()``): the kernel lends freed ports to later connections, a sink's among them, and a sink
connection taken for a filler would be closed unrecorded after its request left.

Rows never reach a log: the recorded bytes live in this process's memory for one row, and only
derived facts (days, digests, counts) enter a history.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from certification.http_framing import RawRequest, RequestFramer

MARKER_HEADER = b"X-Restproof-Target"
MAX_HELD_BODY = 16 * 1024 * 1024
MAX_CONNECTION_BYTES = 96 * 1024 * 1024
BACKLOG = 64
_SYN_SENT = "02"
Marker = Callable[[RawRequest], bool | None]
"""True: mark this request; False: do not; None: undecided until its body is complete."""


@dataclass
class TappedConnection:
    connection_id: int
    client: str
    upstream_local: str = ""
    """The address the proxy logs as this connection's client."""
    opened_at: float = field(default_factory=time.time)
    closed_at: float | None = None
    client_left_at: float | None = None
    """When the sink stopped sending on it (its EOF or a reset): it gave up on or finished its requests."""
    arrivals: list[tuple[int, float]] = field(default_factory=list)
    """(stream offset, time) of every chunk the client sent."""
    framer: RequestFramer = field(default_factory=RequestFramer)
    marked: set[int] = field(default_factory=set)
    """Indexes (in ``framer.requests``) of the requests the marker selected."""
    total_bytes: int = 0

    def time_at(self, offset: int) -> float:
        """When the byte at ``offset`` arrived."""
        moment = self.opened_at
        for start, at in self.arrivals:
            if start > offset:
                break
            moment = at
        return moment


def _established(sock: socket.socket) -> bool:
    try:
        sock.getpeername()
    except OSError:
        return False
    return True


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a RST (SO_LINGER 0), as the other side did."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class _Relay:
    """One client connection relayed to the proxy, recording the client's bytes."""

    def __init__(self, tap: WireTap, record: TappedConnection, client: asyncio.StreamReader,
                 client_writer: asyncio.StreamWriter) -> None:
        self.tap, self.record = tap, record
        self.client, self.client_writer = client, client_writer
        self.pending = bytearray()
        """Client bytes not yet passed on (a request held until the marker decides)."""
        self.passed = 0
        """Client stream offset up to which bytes were passed on."""

    async def run(self) -> None:
        try:
            upstream, upstream_writer = await asyncio.open_connection(*self.tap.upstream)
        except OSError:
            _reset(self.client_writer)
            return
        local = upstream_writer.get_extra_info("sockname")
        self.record.upstream_local = f"{local[0]}:{local[1]}"
        to_upstream = asyncio.ensure_future(self._client_to_upstream(upstream_writer))
        to_client = asyncio.ensure_future(self._upstream_to_client(upstream))
        done, _ = await asyncio.wait({to_upstream, to_client}, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if task.exception() is not None:  # a reset on one side: reset the other, stop both
                for writer in (upstream_writer, self.client_writer):
                    _reset(writer)
        await asyncio.gather(to_upstream, to_client, return_exceptions=True)
        for writer in (upstream_writer, self.client_writer):
            writer.close()
        self.record.closed_at = time.time()

    async def _client_to_upstream(self, upstream: asyncio.StreamWriter) -> None:
        try:
            await self._pump_client(upstream)
        finally:
            self.record.client_left_at = time.time()

    async def _pump_client(self, upstream: asyncio.StreamWriter) -> None:
        while True:
            data = await self.client.read(65536)
            if not data:
                if self.pending:
                    upstream.write(bytes(self.pending))
                    self.pending.clear()
                if upstream.can_write_eof():
                    upstream.write_eof()
                return
            self._record(data)
            upstream.write(self._releasable())
            await upstream.drain()

    async def _upstream_to_client(self, upstream: asyncio.StreamReader) -> None:
        while True:
            data = await upstream.read(65536)
            if not data:
                if self.client_writer.can_write_eof():
                    self.client_writer.write_eof()
                return
            self.client_writer.write(data)
            await self.client_writer.drain()

    def _record(self, data: bytes) -> None:
        record = self.record
        with self.tap.lock:
            record.arrivals.append((record.total_bytes, time.time()))
            record.total_bytes += len(data)
            if record.total_bytes <= MAX_CONNECTION_BYTES:
                record.framer.feed(data)
        self.pending.extend(data)

    def _releasable(self) -> bytes:
        """The pending bytes that may go on now, with the marker header added where selected."""
        marker = self.tap.marker
        framer = self.record.framer
        if marker is None or framer.failed:
            return self._take(self.passed + len(self.pending))
        out = bytearray()
        with self.tap.lock:
            requests = list(enumerate(framer.requests))
        for index, request in requests:
            if request.head_complete and request.start + len(request.head) + 4 <= self.passed:
                continue  # already passed on
            if not request.head_complete:
                out.extend(self._take(request.start))  # hold a partial head: the marker needs it whole
                return bytes(out)
            decision = marker(request)
            if decision is None and not request.body_complete and len(request.body) < MAX_HELD_BODY:
                out.extend(self._take(request.start))  # hold the request until its body decides
                return bytes(out)
            head_at = request.start + len(request.head) + 2  # before the empty line's CRLF
            out.extend(self._take(head_at))
            if decision:
                out.extend(MARKER_HEADER + b": 1\r\n")
                with self.tap.lock:
                    self.record.marked.add(index)
        out.extend(self._take(self.passed + len(self.pending)))
        return bytes(out)

    def _take(self, until: int) -> bytes:
        count = max(0, min(until - self.passed, len(self.pending)))
        taken = bytes(self.pending[:count])
        del self.pending[:count]
        self.passed += count
        return taken


class WireTap:
    """Listens on ``listen`` addresses; relays each connection to ``upstream`` (host, port)."""

    def __init__(self, upstream: tuple[str, int], listen: Sequence[tuple[str, int]] = (("127.0.0.1", 0),)) -> None:
        self.upstream = upstream
        self._listen = tuple(listen)
        self.lock = threading.Lock()
        self.marker: Marker | None = None
        self._connections: list[TappedConnection] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="restproof-wiretap", daemon=True)
        self._sockets: list[socket.socket] = []
        self._accepting: asyncio.Event | None = None
        self._fillers: list[socket.socket] = []
        self._filler_ports: set[int] = set()
        self._relays: set[asyncio.Task[None]] = set()
        self._acceptors: list[asyncio.Task[None]] = []
        self.addresses: list[tuple[str, int]] = []

    def start(self) -> list[tuple[str, int]]:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self.addresses = future.result(timeout=30)
        return self.addresses

    async def _start(self) -> list[tuple[str, int]]:
        self._accepting = asyncio.Event()
        self._accepting.set()
        addresses = []
        for host, port in self._listen:
            sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(BACKLOG)
            sock.setblocking(False)
            self._sockets.append(sock)
            bound = sock.getsockname()
            addresses.append((bound[0], bound[1]))
        self._start_acceptors()
        return addresses

    def _start_acceptors(self) -> None:
        loop = asyncio.get_running_loop()
        self._acceptors = [loop.create_task(self._accept_loop(sock)) for sock in self._sockets]

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        assert self._accepting is not None
        while True:
            await self._accepting.wait()
            connection, peer = await loop.sock_accept(sock)
            with self.lock:
                filler = peer[1] in self._filler_ports
                self._filler_ports.discard(peer[1])  # accepted once: the kernel may lend the port to a sink next
            if filler:
                connection.close()  # a filler of a stall: it only held a place in the queue
                continue
            task = loop.create_task(self._adopt(connection))
            self._relays.add(task)  # keep a reference until it ends
            task.add_done_callback(self._relays.discard)

    async def _adopt(self, connection: socket.socket) -> None:
        reader, writer = await asyncio.open_connection(sock=connection)
        await self._accept(reader, writer)

    def stall(self) -> None:
        """Stop accepting on the first address and fill its queue: further connects hang."""
        async def pause() -> None:
            assert self._accepting is not None
            self._accepting.clear()
            for acceptor in self._acceptors:  # an accept already waiting would free a place in the queue
                acceptor.cancel()
        asyncio.run_coroutine_threadsafe(pause(), self._loop).result(timeout=10)
        host, port = self.addresses[0]
        for _ in range(BACKLOG + 2):
            filler = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect((host, port))
            self._fillers.append(filler)
            with self.lock:
                self._filler_ports.add(filler.getsockname()[1])

    def resume(self) -> None:
        async def go() -> None:
            assert self._accepting is not None
            self._accepting.set()
            if all(acceptor.done() for acceptor in self._acceptors):
                self._start_acceptors()
        asyncio.run_coroutine_threadsafe(go(), self._loop).result(timeout=10)
        time.sleep(0.05)  # let the queued fillers be accepted and dropped
        for filler in self._fillers:
            if not _established(filler):  # its SYN was dropped: it will never be accepted
                with self.lock:
                    self._filler_ports.discard(filler.getsockname()[1])
            with contextlib.suppress(OSError):
                filler.close()
        self._fillers = []

    def connect_hanging(self) -> bool:
        """Is a connect to the first address waiting in SYN_SENT right now (the kernel's TCP table)?"""
        try:
            table = Path("/proc/net/tcp").read_text()
        except OSError:
            return False
        wanted = f":{self.addresses[0][1]:04X}"
        return any(len(fields) > 3 and fields[3] == _SYN_SENT and fields[2].endswith(wanted)
                   for fields in (line.split() for line in table.splitlines()[1:]))

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("?", 0)
        with self.lock:
            record = TappedConnection(len(self._connections), f"{peer[0]}:{peer[1]}")
            self._connections.append(record)
        await _Relay(self, record, reader, writer).run()

    def reset(self, marker: Marker | None = None) -> None:
        """Forget every recorded connection (a new row starts) and install the row's marker, and the
        source ports of the last stall's fillers: one the kernel dropped at the full queue is never
        accepted, and a sink's connection from that port must not be taken for it."""
        with self.lock:
            self._connections = []
            self.marker = marker
            self._filler_ports.clear()

    def until_clients_left(self, timeout_s: float = 5.0) -> bool:
        """Wait until the client of every recorded connection has left (its EOF or reset reached the
        tap); True when all had by ``timeout_s``. Called once a sink process has exited: the kernel
        closed its sockets at once, but this loop, one thread among every lane's, may read those
        closes a moment later on a loaded machine."""
        deadline = time.monotonic() + timeout_s
        while any(connection.client_left_at is None for connection in self.connections()):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def connections(self) -> list[TappedConnection]:
        with self.lock:
            return list(self._connections)

    def stop(self) -> None:
        async def close() -> None:
            for sock in self._sockets:
                sock.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop.close()
