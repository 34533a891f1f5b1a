"""Raw-socket helpers for the wire tests against a real `mock-receiver serve`: requests whose bytes
(Host, repeated headers, half-sent heads, slow bodies) no HTTP client library would send."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host.strip("[]"), int(port)


def authority(url: str) -> str:
    return url.removeprefix("http://")


@dataclass
class Answer:
    raw: bytes
    seconds: float
    """From the first byte sent to the connection's end (or the read timeout)."""

    @property
    def status(self) -> int | None:
        if not self.raw.startswith(b"HTTP/1.1 "):
            return None
        return int(self.raw[9:12])

    @property
    def body(self) -> bytes:
        return self.raw.partition(b"\r\n\r\n")[2]

    @property
    def head(self) -> str:
        return self.raw.partition(b"\r\n\r\n")[0].decode("latin-1").lower()


def request_bytes(method: str, path: str, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    """A request with exactly these header lines (no Host added: the caller chooses it, or none)."""
    lines = [f"{method} {path} HTTP/1.1", *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def exchange(url: str, *parts: bytes, pause: float = 0.0, timeout: float = 15.0, until_closed: bool = False
             ) -> Answer:
    """Send ``parts`` (``pause`` seconds apart, never half-closing: uvicorn reads EOF as a disconnect)
    and read one whole answer (``until_closed``: until the server closes the connection) or until
    ``timeout``. A send the server already refused (it closed the connection) ends the sending, not
    the test."""
    started = time.monotonic()
    with socket.create_connection(address(url), timeout=timeout) as sock:
        try:
            for index, part in enumerate(parts):
                if index and pause:
                    time.sleep(pause)
                sock.sendall(part)
        except OSError:
            pass
        received = b""
        try:
            while (until_closed or not _complete(received)) and (chunk := sock.recv(65536)):
                received += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return Answer(received, time.monotonic() - started)


def _complete(received: bytes) -> bool:
    """One whole answer with a Content-Length has arrived (a keep-alive connection stays open after it)."""
    head, separator, body = received.partition(b"\r\n\r\n")
    if not separator:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False
