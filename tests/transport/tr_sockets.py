"""Loopback sockets in states a transport test needs (shared by tests/transport and tests/security)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


@contextlib.contextmanager
def full_backlog_listener() -> Iterator[socket.socket]:
    """A 127.0.0.1 listener whose accept queue is full: a new connect's SYN is dropped and the
    connect hangs until its own timeout (a connect timeout, not a refusal)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    fillers = []
    try:
        for _ in range(3):  # fill the accept queue; later SYNs are dropped and connect hangs
            filler = socket.socket()
            filler.settimeout(0.3)
            with contextlib.suppress(OSError):
                filler.connect(server.getsockname())
            fillers.append(filler)
        yield server
    finally:
        for filler in fillers:
            filler.close()
        server.close()
