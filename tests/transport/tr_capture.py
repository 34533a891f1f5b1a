"""A raw HTTP/1.1 capture server: records each request's head bytes and counts (never keeps)
its body, then answers a small JSON document. Used to see exactly what reached the wire."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field


@dataclass
class Captured:
    head: bytes
    body_bytes: int
    body_sample: bytes


@dataclass
class CaptureServer:
    requests: list[Captured] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            buffer = b""
            while b"\r\n\r\n" not in buffer:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
            head, _, rest = buffer.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            seen, sample = len(rest), rest[:256]
            while seen < length:
                data = conn.recv(1 << 20)
                if not data:
                    break
                if len(sample) < 256:
                    sample += data[: 256 - len(sample)]
                seen += len(data)
            self.requests.append(Captured(head, seen, sample))
            payload = b'{"receipt_id": "rcpt_capture", "accepted_rows": 0}'
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                         + str(len(payload)).encode() + b"\r\nconnection: close\r\n\r\n" + payload)

    def close(self) -> None:
        self._sock.close()
