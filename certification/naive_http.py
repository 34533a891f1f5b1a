"""The naive baselines' HTTP/1.1 client: one kept-alive connection, parsed by h11.

h11 is the parser under httpx (through httpcore), so a baseline judges a broken answer exactly as an
httpx client would: a response cut inside its headers or its body is an error it retries, never a
success. httpx itself is not used because a full matrix starts about 840 baseline processes and
importing it (with httpcore, its models and their imports) cost each about 0.16 s of CPU more than
h11 and a socket (-X importtime; ``python -c "import httpx"`` 183 ms against 103 ms). The standard
library's ``http.client`` is as cheap but ends the headers quietly at the end of the stream: a
response cut after 40 bytes read as ``200 OK``, and the baseline was not caught where it must be.

Like a pooled httpx connection, one that the server closed while it was idle is not written into: it
is reopened first. Any failure closes the connection; the next request opens a new one.
"""

from __future__ import annotations

import select
import socket
from urllib.parse import urlsplit

import h11

TIMEOUT_S = 10.0
READ_BYTES = 65536


class ExchangeFailed(Exception):
    """No complete answer: the connection failed, or the answer broke HTTP/1.1 framing."""


class NaiveClient:
    def __init__(self, url: str, timeout_s: float = TIMEOUT_S) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--url must be an http(s) URL, not {url!r}")
        self._tls = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port or (443 if self._tls else 80)
        self._authority = parts.netloc.rpartition("@")[2]
        self._prefix = parts.path.rstrip("/")
        self._timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._http = h11.Connection(h11.CLIENT)

    def request(self, method: str, target: str, headers: dict[str, str], body: bytes) -> int:
        """The status of the final answer, its body read to the end; ExchangeFailed otherwise."""
        try:
            return self._exchange(method, target, headers, body)
        except (OSError, h11.ProtocolError) as exc:
            self.close()
            raise ExchangeFailed(type(exc).__name__) from None
        except ExchangeFailed:
            self.close()
            raise

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self._http = h11.Connection(h11.CLIENT)

    def _connected(self) -> socket.socket:
        if self._sock is not None and select.select([self._sock], [], [], 0)[0]:
            self.close()  # readable while idle: the server closed it (or sent what nobody asked for)
        if self._sock is None:
            sock = socket.create_connection((self._host, self._port), timeout=self._timeout_s)
            if self._tls:
                import ssl  # noqa: PLC0415 - only an https receiver needs it

                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self._host)
            self._sock = sock
        return self._sock

    def _exchange(self, method: str, target: str, headers: dict[str, str], body: bytes) -> int:
        sock = self._connected()
        fields = [("Host", self._authority), *headers.items()]
        if not any(name.lower() == "content-length" for name, _ in fields):
            fields.append(("Content-Length", str(len(body))))
        http = self._http
        sock.sendall(b"".join([http.send(h11.Request(method=method, target=self._prefix + target, headers=fields))
                               or b"", http.send(h11.Data(data=body)) or b"", http.send(h11.EndOfMessage()) or b""]))
        status: int | None = None
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                http.receive_data(sock.recv(READ_BYTES))  # b"": the end of the stream, which h11 judges
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise ExchangeFailed("the connection closed before the answer ended")
        if status is None:
            raise ExchangeFailed("an answer without a status")
        if http.our_state is h11.DONE and http.their_state is h11.DONE:
            http.start_next_cycle()
        else:
            self.close()  # the server will close it (Connection: close): the next request opens another
        return status
