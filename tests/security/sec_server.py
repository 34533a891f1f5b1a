"""An in-test HTTPS listener (trustme CA, optional client-certificate requirement) that records
every request it receives and either answers itself or forwards to an upstream (the real mock
receiver), checking the sink's credentials like an authorization gateway would.

It also issues OAuth client-credentials tokens at ``/oauth/token`` with a short lifetime, so a
delivery that outlives a token exercises the refresh. Everything it saw stays in memory
(``seen``, ``raw``) for the zero-credential and sentinel checks.
"""

from __future__ import annotations

import base64
import itertools
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import trustme


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    peer_subject: str | None


Responder = Callable[[Seen], tuple[int, list[tuple[str, str]], bytes]]


@dataclass
class Pki:
    """One test CA, its server certificate for localhost/127.0.0.1, and files for the sink."""

    directory: Path
    ca: trustme.CA = field(default_factory=trustme.CA)

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.server = self.ca.issue_cert("localhost", "127.0.0.1")
        self.ca_file = self.directory / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))

    def client_files(self, name: str, leaf: trustme.LeafCert, passphrase: bytes | None = None) -> tuple[Path, Path]:
        """(certificate chain, private key) of a client identity, the key optionally encrypted."""
        from cryptography.hazmat.primitives import serialization

        cert = self.directory / f"{name}.crt"
        key = self.directory / f"{name}.key"
        cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        if passphrase is None:
            leaf.private_key_pem.write_to_path(str(key))
        else:
            loaded = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
            key.write_bytes(loaded.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                 serialization.BestAvailableEncryption(passphrase)))
        return cert, key


class TlsListener:
    def __init__(self, pki: Pki | None, respond: Responder, *, require_client_cert: bool = False,
                 client_ca: trustme.CA | None = None) -> None:
        self.seen: list[Seen] = []
        self.raw = bytearray()
        self.connections = 0
        self.handshake_failures = 0
        self._respond = respond
        self._context: ssl.SSLContext | None = None
        if pki is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            pki.server.configure_cert(context)
            if require_client_cert:
                context.verify_mode = ssl.CERT_REQUIRED
                (client_ca or pki.ca).configure_trust(context)
            self._context = context
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(32)
        self.port = self._sock.getsockname()[1]
        scheme = "https" if pki is not None else "http"
        self.url = f"{scheme}://localhost:{self.port}"
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        stream: socket.socket = conn
        subject = None
        try:
            conn.settimeout(10)
            if self._context is not None:
                try:
                    stream = self._context.wrap_socket(conn, server_side=True)
                except (OSError, ssl.SSLError):
                    with self._lock:
                        self.handshake_failures += 1
                    return
                peer: Any = stream.getpeercert()
                if peer:
                    subject = ",".join(f"{k}={v}" for rdn in peer.get("subject", ()) for k, v in rdn)
            self._exchange(stream, subject)
        except OSError:
            return
        finally:
            stream.close()

    def _exchange(self, stream: socket.socket, subject: str | None) -> None:
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            data = stream.recv(65536)
            if not data:
                return
            buffer += data
        head, _, body = buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            data = stream.recv(1 << 20)
            if not data:
                break
            body += data
        seen = Seen(method, path, headers, body, subject)
        with self._lock:
            self.raw += head + b"\r\n\r\n" + body
            self.seen.append(seen)
        status, extra, payload = self._respond(seen)
        response = [f"HTTP/1.1 {status} X", f"content-length: {len(payload)}", "connection: close",
                    *(f"{name}: {value}" for name, value in extra)]
        stream.sendall(("\r\n".join(response) + "\r\n\r\n").encode("latin-1") + payload)

    def close(self) -> None:
        self._sock.close()


def eventually(check: Callable[[], bool], seconds: float = 5.0) -> bool:
    """The listener's threads count after the client has its answer: wait (bounded) for them."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def fixed(status: int, body: dict[str, object] | None = None,
          headers: tuple[tuple[str, str], ...] = ()) -> Responder:
    payload = json.dumps(body or {}).encode()
    return lambda seen: (status, [("content-type", "application/json"), *headers], payload)


@dataclass
class Gateway:
    """Checks one auth method, issues OAuth tokens, forwards the rest to ``upstream`` unchanged
    (minus the credential headers, which the mock receiver never needs to see)."""

    method: str
    expected: str
    """bearer: the token; api_key_header: ``header=value``; basic: ``user:password``;
    oauth2_client_credentials: ``client_id:secret``; mtls: the client certificate's CN."""
    upstream: str | None = None
    token_lifetime_s: int = 2
    issued: list[str] = field(default_factory=list)
    refused: int = 0
    expired_refusals: int = 0
    forward_delay_s: float = 0.0
    _expiry: dict[str, float] = field(default_factory=dict)
    _counter: itertools.count[int] = field(default_factory=itertools.count)

    def __call__(self, seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        if self.method == "oauth2_client_credentials" and seen.path == "/oauth/token":
            return self._token(seen)
        if not self._authorised(seen):
            self.refused += 1
            problem = json.dumps({"type": "about:blank", "title": "unauthorised", "status": 401}).encode()
            return 401, [("content-type", "application/problem+json")], problem
        if self.upstream is None:
            return 200, [("content-type", "application/json")], b'{"ok": true}'
        forwarded = {k: v for k, v in seen.headers.items()
                     if k not in ("authorization", "host", "content-length", "connection", "x-api-key")}
        time.sleep(self.forward_delay_s)
        with httpx.Client(timeout=30) as client:
            reply = client.request(seen.method, self.upstream + seen.path, headers=forwarded, content=seen.body)
        keep = [(k, v) for k, v in reply.headers.items()
                if k.lower() not in ("content-length", "connection", "transfer-encoding", "content-encoding")]
        return reply.status_code, keep, reply.content

    def _token(self, seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        client_id, _, secret = self.expected.partition(":")
        wanted = "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()
        if seen.headers.get("authorization") != wanted or b"grant_type=client_credentials" not in seen.body:
            self.refused += 1
            return 401, [("content-type", "application/json")], b'{"error": "invalid_client"}'
        token = f"tok-{next(self._counter)}-{secret[:4]}x"
        self.issued.append(token)
        self._expiry[token] = time.monotonic() + self.token_lifetime_s
        body = {"access_token": token, "token_type": "Bearer", "expires_in": self.token_lifetime_s}
        return 200, [("content-type", "application/json")], json.dumps(body).encode()

    def _authorised(self, seen: Seen) -> bool:
        auth = seen.headers.get("authorization", "")
        if self.method == "bearer":
            return auth == f"Bearer {self.expected}"
        if self.method == "api_key_header":
            name, _, value = self.expected.partition("=")
            return seen.headers.get(name.lower()) == value and not auth
        if self.method == "basic":
            return auth == "Basic " + base64.b64encode(self.expected.encode()).decode()
        if self.method == "oauth2_client_credentials":
            expiry = self._expiry.get(auth.removeprefix("Bearer "))
            if expiry is not None and time.monotonic() >= expiry:
                self.expired_refusals += 1
            return expiry is not None and time.monotonic() < expiry
        if self.method == "mtls":
            return seen.peer_subject is not None and f"commonName={self.expected}" in seen.peer_subject
        return False
