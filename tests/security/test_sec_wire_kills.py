"""Kill tests of sink/security/wire.py (issue 14): the binding's transport and its OAuth token
transport both resolve through the binding's resolver and both obey the network policy; a binding
whose auth cannot be built is refused with the reason and nothing opened; the connection bound is
the one asked for; closing the binding transport closes every connection it opened.

The receiver is a keep-alive HTTPS server (trustme CA) on a loopback address of 127.0.0.0/8, so a
connection that went to the wrong address (e.g. the system's answer for ``localhost``) fails."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sec_server import Pki, eventually
from sec_support import SENTINELS, TIMEOUTS, binding, policies, post

import sink.transport.auth as auth_module
from sink.contracts.security_policy import NetworkPolicy
from sink.contracts.transport import FailureKind, SendCertainty
from sink.security.errors import SecurityRefusal
from sink.security.wire import BindingTransport, open_binding_transport, token_origin_allowed
from sink.transport import default_registry
from sink.transport.auth import NoAuth
from sink.transport.httpx_transport import HttpxRestTransport

pytestmark = pytest.mark.timeout(60)
ENVIRON = {"TOKEN": SENTINELS["token"], "SECRET": SENTINELS["client_secret"]}


class KeepAliveServer(ThreadingHTTPServer):
    """HTTP/1.1 keep-alive over TLS: counts open connections, requests per path, and the most
    requests in flight at once. With ``release_at`` the mutation requests are held until that
    many are in flight at once, or ``hold_s`` passed: a bound below ``release_at`` shows as the
    most in flight however slowly the clients arrive."""

    daemon_threads = True

    def __init__(self, pki: Pki, address: str, release_at: int = 0, hold_s: float = 2.5) -> None:
        super().__init__((address, 0), _Handler)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        pki.ca.issue_cert("localhost", "127.0.0.3", "127.0.0.4").configure_cert(context)
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.port = self.server_address[1]
        self.hold_s = hold_s
        self.release_at = release_at
        self.released = threading.Event()
        self.lock = threading.Lock()
        self.open_connections = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self.paths: list[str] = []
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that goes away (or fails the handshake) is not a test failure of the server."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: KeepAliveServer

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.open_connections += 1

    def finish(self) -> None:
        with self.server.lock:
            self.server.open_connections -= 1
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        with self.server.lock:
            self.server.paths.append(self.path)
            self.server.in_flight += 1
            self.server.most_in_flight = max(self.server.most_in_flight, self.server.in_flight)
            if self.server.in_flight >= self.server.release_at:
                self.server.released.set()
        if self.path == "/oauth/token":
            body = json.dumps({"access_token": "tok-1", "token_type": "Bearer", "expires_in": 300}).encode()
        else:
            self.server.released.wait(self.server.hold_s)
            self.server.released.set()
            body = b'{"ok": true}'
        with self.server.lock:
            self.server.in_flight -= 1
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def servers() -> Iterator[list[KeepAliveServer]]:
    opened: list[KeepAliveServer] = []
    yield opened
    for server in opened:
        server.shutdown()
        server.server_close()


def _serve(servers: list[KeepAliveServer], pki: Pki, address: str, release_at: int = 0) -> KeepAliveServer:
    server = KeepAliveServer(pki, address, release_at)
    servers.append(server)
    return server


def _oauth(origin: str, endpoint: str) -> Any:
    return binding(origin, "oauth2_client_credentials", credential_ref="env://SECRET", oauth_client_id="client-1",
                   oauth_token_endpoint=endpoint)


def _refused(bound: Any, pki: Pki, tmp_path: Path) -> SecurityRefusal:
    with pytest.raises(SecurityRefusal) as raised:
        open_binding_transport(bound, timeouts=TIMEOUTS, policies=policies(tmp_path / "policies", pki),
                               resolver=default_registry(ENVIRON))
    return raised.value


def test_an_unusable_auth_is_refused_with_its_reason(pki: Pki, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    origin = "https://localhost:9"
    missing = _refused(binding(origin, "bearer"), pki, tmp_path)
    assert missing.code == "transport.auth.unusable" and "(missing_credential_ref)" in missing.detail
    reserved = _refused(binding(origin, "api_key_header", credential_ref="env://TOKEN",
                                api_key_header="authorization"), pki, tmp_path)
    assert reserved.code == "transport.auth.unusable" and "(invalid)" in reserved.detail
    # A build of the transport without one method: refused by name, never a fallback to none.
    monkeypatch.delitem(auth_module.AUTH_FACTORIES, "basic")
    unbuilt = _refused(binding(origin, "basic", credential_ref="env://TOKEN"), pki, tmp_path)
    assert unbuilt.code == "transport.auth.unusable" and "(basic)" in unbuilt.detail
    for refusal in (missing, reserved, unbuilt):
        assert SENTINELS["token"] not in str(refusal) and "TOKEN" not in str(refusal)


def test_an_oauth_binding_needs_an_endpoint_and_a_client_id(pki: Pki, tmp_path: Path) -> None:
    network = NetworkPolicy(id="n@1", description=None, allowed_networks=("127.0.0.0/8",), token_origins=("https://localhost:9",))
    assert token_origin_allowed(binding("https://localhost:9", "bearer"), network) is False
    without_id = binding("https://localhost:9", "oauth2_client_credentials", credential_ref="env://SECRET",
                         oauth_token_endpoint="https://localhost:9/oauth/token")
    assert token_origin_allowed(without_id, network) is True
    assert _refused(without_id, pki, tmp_path).code == "transport.auth.token_endpoint_not_allowed"


def test_both_transports_resolve_through_the_bindings_resolver(pki: Pki, tmp_path: Path,
                                                               servers: list[KeepAliveServer]) -> None:
    receiver = _serve(servers, pki, "127.0.0.3")
    origin = f"https://localhost:{receiver.port}"
    asked: list[str] = []

    def resolver(host: str, port: int) -> str:
        asked.append(host)
        return "127.0.0.3"  # the system would answer 127.0.0.1, where nothing listens on this port

    wire = open_binding_transport(_oauth(origin, f"{origin}/oauth/token"), timeouts=TIMEOUTS,
                                  policies=policies(tmp_path / "policies", pki), resolver=default_registry(ENVIRON),
                                  dns_resolver=resolver)
    try:
        outcome = wire.transport.send(post(), timeouts=TIMEOUTS)
    finally:
        wire.close()
    assert outcome.response is not None and outcome.response.status == 200, outcome.evidence
    assert outcome.evidence.resolved_address == "127.0.0.3"
    assert receiver.paths == ["/oauth/token", "/mock/v1/items"] and asked == ["localhost", "localhost"]


def test_the_token_request_obeys_the_network_policy_too(pki: Pki, tmp_path: Path,
                                                        servers: list[KeepAliveServer]) -> None:
    receiver = _serve(servers, pki, "127.0.0.3")
    issuer = _serve(servers, pki, "127.0.0.4")
    origin, issuer_origin = f"https://localhost:{receiver.port}", f"https://127.0.0.4:{issuer.port}"
    store = policies(tmp_path / "policies", pki, networks=("127.0.0.3/32",), token_origins=(issuer_origin,))
    wire = open_binding_transport(_oauth(origin, f"{issuer_origin}/oauth/token"), timeouts=TIMEOUTS, policies=store,
                                  resolver=default_registry(ENVIRON), dns_resolver=lambda host, port: "127.0.0.3")
    try:
        outcome = wire.transport.send(post(), timeouts=TIMEOUTS)
    finally:
        wire.close()
    # A named token origin is still only reachable at an allowed address: no token, no mutation.
    assert outcome.evidence.failure is FailureKind.CREDENTIAL_UNAVAILABLE
    assert outcome.evidence.certainty is SendCertainty.NOT_STARTED
    assert issuer.paths == [] and receiver.paths == []


def _concurrent_sends(wire: BindingTransport, count: int) -> list[Any]:
    outcomes: list[Any] = []
    threads = [threading.Thread(target=lambda: outcomes.append(wire.transport.send(post(), timeouts=TIMEOUTS)))
               for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return outcomes


@pytest.mark.parametrize(("asked", "sends", "bound"), [(None, 9, 8), (2, 3, 2)])
def test_concurrent_requests_share_the_asked_number_of_connections(
        asked: int | None, sends: int, bound: int, pki: Pki, tmp_path: Path, servers: list[KeepAliveServer]) -> None:
    receiver = _serve(servers, pki, "127.0.0.3", release_at=sends)
    bound_binding = binding(f"https://localhost:{receiver.port}", "bearer", credential_ref="env://TOKEN")
    common: dict[str, Any] = {"timeouts": TIMEOUTS, "policies": policies(tmp_path / "policies", pki),
                              "resolver": default_registry(ENVIRON), "dns_resolver": lambda host, port: "127.0.0.3"}
    wire = (open_binding_transport(bound_binding, **common) if asked is None  # the default bound
            else open_binding_transport(bound_binding, max_connections=asked, **common))
    try:
        outcomes = _concurrent_sends(wire, sends)
    finally:
        wire.close()
    assert len(outcomes) == sends and all(o.response is not None and o.response.status == 200 for o in outcomes)
    assert receiver.most_in_flight == bound


def test_closing_the_binding_transport_closes_every_connection_it_opened(pki: Pki, tmp_path: Path,
                                                                         servers: list[KeepAliveServer]) -> None:
    receiver = _serve(servers, pki, "127.0.0.3")
    origin = f"https://localhost:{receiver.port}"
    wire = open_binding_transport(_oauth(origin, f"{origin}/oauth/token"), timeouts=TIMEOUTS,
                                  policies=policies(tmp_path / "policies", pki), resolver=default_registry(ENVIRON),
                                  dns_resolver=lambda host, port: "127.0.0.3")
    assert wire.transport.send(post(), timeouts=TIMEOUTS).response is not None
    assert eventually(lambda: receiver.open_connections == 2)  # the token's and the mutation's, kept alive
    wire.close()
    assert eventually(lambda: receiver.open_connections == 0)
    # Built by hand with no token transport, it closes its one transport.
    plain = HttpxRestTransport(origin, NoAuth(), resolver=lambda host, port: "127.0.0.3")
    network = NetworkPolicy(id="n@1", description=None, allowed_networks=("127.0.0.0/8",))
    BindingTransport(plain, NoAuth(), network).close()
    with pytest.raises(RuntimeError):
        plain.send(post(), timeouts=TIMEOUTS)


@pytest.mark.parametrize(("origin", "contexts"), [("http://127.0.0.1:9", 0), ("https://localhost:9", 1)])
def test_only_an_https_binding_builds_a_tls_context(pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    origin: str, contexts: int) -> None:
    import sink.security.wire as wire

    built: list[object] = []
    real = wire.client_context  # type: ignore[attr-defined]  # the name wire.py looks up at call time

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(wire, "client_context", counting)
    monkeypatch.setenv("SECRET", "sentinel-secret-5b0c")
    opened = open_binding_transport(binding(origin, "bearer", credential_ref="env://SECRET"), timeouts=TIMEOUTS,
                                    policies=policies(tmp_path / "policies", pki),
                                    resolver=default_registry({"SECRET": "sentinel-secret-5b0c"}))
    opened.close()
    assert len(built) == contexts
