"""Behaviour where the built-in server deliberately differs from Toxiproxy (docs/tcp-faults.md).

These run against the built-in server only, on a thread of the test process: each one pins a
documented difference, so it would be wrong to expect it of the real server.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest
from fpt_helpers import EchoServer, connect, read_until_closed
from toxiproxy import Toxiproxy

from fault_proxy.tcp.launcher import ToxiproxyHandle, start_toxiproxy

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def builtin() -> Iterator[ToxiproxyHandle]:
    handle = start_toxiproxy("builtin", in_thread=True)
    yield handle
    handle.stop()


@pytest.fixture
def client(builtin: ToxiproxyHandle) -> Iterator[Toxiproxy]:
    toxi = Toxiproxy()
    toxi.update_api_consumer(builtin.host, builtin.port)
    toxi.destroy_all()
    yield toxi
    toxi.destroy_all()


def test_half_close_is_forwarded_so_the_reply_still_arrives(client: Toxiproxy,
                                                            echo_server: EchoServer) -> None:
    proxy = client.create(upstream=echo_server.address, name="half")
    with connect(proxy.listen) as sock:
        sock.sendall(b"request")
        sock.shutdown(socket.SHUT_WR)
        assert read_until_closed(sock)[0] == b"request"


def test_an_upstream_reset_reaches_the_client_as_a_reset(client: Toxiproxy) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)

        def reset_first_connection() -> None:
            conn, _ = server.accept()
            conn.recv(16)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

        worker = threading.Thread(target=reset_first_connection, daemon=True)
        worker.start()
        proxy = client.create(upstream=f"127.0.0.1:{server.getsockname()[1]}", name="uprst")
        with connect(proxy.listen) as sock:
            sock.sendall(b"hi")
            with pytest.raises(ConnectionResetError):
                read_until_closed(sock)
        worker.join(5)


def test_reset_peer_added_to_an_open_connection_resets_it(client: Toxiproxy,
                                                          echo_server: EchoServer) -> None:
    proxy = client.create(upstream=echo_server.address, name="late_rst")
    with connect(proxy.listen) as sock:
        sock.sendall(b"one")
        assert sock.recv(16) == b"one"
        proxy.add_toxic(type="reset_peer", attributes={"timeout": 0})
        sock.sendall(b"two")
        with pytest.raises(ConnectionResetError):
            read_until_closed(sock)


def test_removing_an_active_timeout_closes_what_it_held(client: Toxiproxy, echo_server: EchoServer) -> None:
    proxy = client.create(upstream=echo_server.address, name="held")
    proxy.add_toxic(type="timeout", attributes={"timeout": 0})
    with connect(proxy.listen) as sock:
        sock.sendall(b"lost")
        time.sleep(0.05)
        proxy.destroy_toxic("timeout_downstream")
        assert read_until_closed(sock)[0] == b""


def test_a_listen_address_without_host_binds_loopback(client: Toxiproxy, echo_server: EchoServer) -> None:
    proxy = client.create(upstream=echo_server.address, name="nohost", listen=":0")
    host, _, port = proxy.listen.rpartition(":")
    assert host == "127.0.0.1"
    assert int(port) > 0


def test_slicer_and_latency_compose_in_order(client: Toxiproxy, echo_server: EchoServer) -> None:
    proxy = client.create(upstream=echo_server.address, name="compose")
    proxy.add_toxic(type="slicer", name="s", attributes={"average_size": 8, "delay": 2000})
    proxy.add_toxic(type="latency", name="l", attributes={"latency": 30, "jitter": 10})
    payload = bytes(range(200))
    with connect(proxy.listen) as sock:
        started = time.monotonic()
        sock.sendall(payload)
        received = b""
        while len(received) < len(payload):
            data = sock.recv(4096)
            assert data
            received += data
    assert received == payload
    assert time.monotonic() - started >= 0.020  # latency minus the largest jitter
