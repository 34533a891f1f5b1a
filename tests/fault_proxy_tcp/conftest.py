"""Fixtures for the fault_proxy.tcp tests: servers under test and upstream servers.

`toxiproxy_server` is parametrised over "builtin" (this project's server, always run) and "real"
(a Toxiproxy binary, skipped with the reason when none is installed), so one set of client-side
expectations is checked against both.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fpt_helpers import EchoServer, start_http_server, start_server
from toxiproxy import Toxiproxy

from fault_proxy.tcp.launcher import ToxiproxyHandle


@pytest.fixture(scope="module", params=["builtin", "real"])
def toxiproxy_server(request: pytest.FixtureRequest) -> Iterator[ToxiproxyHandle]:
    handle = start_server(request.param)
    yield handle
    handle.stop()

@pytest.fixture
def toxi(toxiproxy_server: ToxiproxyHandle) -> Iterator[Toxiproxy]:
    """A toxiproxy-python client pointed at the server under test, left clean afterwards."""
    client = Toxiproxy()
    client.update_api_consumer(toxiproxy_server.host, toxiproxy_server.port)
    client.destroy_all()
    yield client
    client.destroy_all()

@pytest.fixture(scope="module")
def echo_server() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.close()

@pytest.fixture
def counting_server() -> Iterator[EchoServer]:
    server = EchoServer(echo=False)
    yield server
    server.close()

@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    server, address = start_http_server()
    yield address
    server.shutdown()
    server.server_close()
