"""A refused call of the Toxiproxy-compatible API changes nothing, on a server process.

Every state-changing route validates its input and binds the listeners it needs before it changes
anything: a PATCH to an address in use, a populate with one bad entry, a reset that cannot re-enable
a proxy, each answers 400 and leaves every proxy listening (or not) where it was, with its
toxics, and the server keeps answering. The addresses in use are held by plain sockets of this test.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fpt_helpers import EchoServer, Served, echo_roundtrip

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    server = Served()
    yield server
    log = server.stop()
    assert server.process.returncode == 0
    assert "Traceback" not in log, log[-3000:]


@pytest.fixture
def api(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=10) as client:
        yield client
        for name in client.get("/proxies").json():
            client.delete(f"/proxies/{name}")


@pytest.fixture
def taken() -> Iterator[str]:
    """A loopback address held by a listening socket of the test (so no proxy can bind it)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        yield f"127.0.0.1:{holder.getsockname()[1]}"


def _free_address() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def _bindable(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, int(port)))
        except OSError:
            return False
    return True


def _create(api: httpx.Client, name: str, upstream: str, **extra: Any) -> dict[str, Any]:
    response = api.post("/proxies", json={"name": name, "upstream": upstream, "listen": "127.0.0.1:0", **extra})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    assert set(response.json()) == {"error", "status"}


@pytest.mark.parametrize("method", ["PATCH", "POST"])
def test_moving_to_an_address_in_use_changes_nothing(api: httpx.Client, echo_server: EchoServer, taken: str,
                                                     method: str) -> None:
    before = _create(api, "p", echo_server.address)
    _create(api, "q", echo_server.address)
    api.post("/proxies/p/toxics", json={"type": "latency", "attributes": {"latency": 1}})
    before = api.get("/proxies/p").json()
    _assert_refused(api.request(method, "/proxies/p", json={"listen": taken}))
    assert api.get("/proxies/p").json() == before  # still enabled, on its old address, with its toxic
    assert echo_roundtrip(before["listen"], b"still here")[0] == b"still here"
    # Moving onto another proxy's port and onto a port of this proxy under another name: in use too.
    q_listen = api.get("/proxies/q").json()["listen"]
    _assert_refused(api.patch("/proxies/p", json={"listen": q_listen}))
    _assert_refused(api.patch("/proxies/p", json={"listen": before["listen"].replace("127.0.0.1", "localhost"),
                                                 "upstream": "127.0.0.1:9"}))
    assert api.get("/proxies/p").json() == before
    assert api.post("/reset").status_code == 204  # nothing left half-changed for reset to trip on


def test_enabling_onto_an_address_in_use_keeps_the_proxy_as_it_was(api: httpx.Client, echo_server: EchoServer,
                                                                    taken: str) -> None:
    _create(api, "p", echo_server.address, enabled=False)
    before = api.get("/proxies/p").json()
    _assert_refused(api.patch("/proxies/p", json={"listen": taken, "enabled": True}))
    assert api.get("/proxies/p").json() == before
    # A disabled proxy may be given any well-formed address; binding it is what can fail later.
    assert api.patch("/proxies/p", json={"listen": taken}).json()["enabled"] is False
    _assert_refused(api.patch("/proxies/p", json={"enabled": True}))
    assert api.get("/proxies/p").json()["enabled"] is False


def test_an_upstream_pointing_at_the_proxy_itself_is_refused_without_change(api: httpx.Client,
                                                                           echo_server: EchoServer) -> None:
    before = _create(api, "p", echo_server.address)
    _assert_refused(api.patch("/proxies/p", json={"upstream": before["listen"]}))
    assert api.get("/proxies/p").json() == before
    assert echo_roundtrip(before["listen"], b"ping")[0] == b"ping"


def test_accepted_moves_still_apply(api: httpx.Client, echo_server: EchoServer) -> None:
    before = _create(api, "p", echo_server.address)
    target = _free_address()
    moved = api.patch("/proxies/p", json={"listen": target})
    assert moved.status_code == 200 and moved.json()["listen"] == target
    assert _bindable(before["listen"])  # the old listener is closed once the new one is up
    assert echo_roundtrip(target, b"moved")[0] == b"moved"
    counting = EchoServer(echo=False)
    try:
        retargeted = api.patch("/proxies/p", json={"upstream": counting.address}).json()
        assert retargeted["listen"] == target and retargeted["upstream"] == counting.address
        with socket.create_connection(("127.0.0.1", int(target.rsplit(":", 1)[1])), timeout=5) as sock:
            sock.sendall(b"12345")
        assert counting.wait_connections(1) == [5]
    finally:
        counting.close()


def test_a_refused_populate_creates_replaces_and_deletes_nothing(api: httpx.Client, echo_server: EchoServer,
                                                                 taken: str) -> None:
    kept = _create(api, "kept", echo_server.address)
    api.post("/proxies/kept/toxics", json={"type": "latency", "attributes": {"latency": 1}})
    kept = api.get("/proxies/kept").json()
    fresh_address = _free_address()
    body = [
        {"name": "new", "upstream": echo_server.address, "listen": fresh_address},
        {"name": "kept", "upstream": echo_server.address, "listen": taken},  # changed, and unbindable
    ]
    _assert_refused(api.post("/populate", json=body))
    assert api.get("/proxies").json() == {"kept": kept}
    assert _bindable(fresh_address)  # the listener bound for "new" was closed again
    assert echo_roundtrip(kept["listen"], b"kept")[0] == b"kept"
    # The same with the bad entry first, and with a duplicate name: still nothing.
    _assert_refused(api.post("/populate", json=list(reversed(body))))
    _assert_refused(api.post("/populate", json=[body[0], body[0]]))
    assert api.get("/proxies").json() == {"kept": kept}


def test_populate_refuses_to_pass_the_proxy_limit_before_creating_any(api: httpx.Client,
                                                                        echo_server: EchoServer) -> None:
    from fault_proxy.tcp.engine import MAX_PROXIES

    _create(api, "existing", echo_server.address, enabled=False)
    body = [{"name": f"n{i}", "upstream": echo_server.address, "enabled": False} for i in range(MAX_PROXIES)]
    _assert_refused(api.post("/populate", content=json.dumps(body), headers={"Content-Type": "application/json"}))
    assert list(api.get("/proxies").json()) == ["existing"]


def test_a_reset_that_cannot_reenable_a_proxy_changes_nothing(api: httpx.Client, echo_server: EchoServer) -> None:
    up = _create(api, "up", echo_server.address)
    api.post("/proxies/up/toxics", json={"type": "latency", "attributes": {"latency": 1}})
    down = _create(api, "down", echo_server.address)
    assert api.patch("/proxies/down", json={"enabled": False}).json()["enabled"] is False
    host, port = down["listen"].rsplit(":", 1)
    with socket.socket() as squatter:  # someone else took the disabled proxy's port meanwhile
        squatter.bind((host, int(port)))
        squatter.listen(1)
        before = api.get("/proxies").json()
        _assert_refused(api.post("/reset"))
        assert api.get("/proxies").json() == before  # "down" still disabled, "up" keeps its toxic
    assert api.post("/reset").status_code == 204  # the port is free again: reset applies whole
    after = api.get("/proxies").json()
    assert after["down"]["enabled"] is True and after["up"]["toxics"] == []
    assert echo_roundtrip(up["listen"], b"up")[0] == b"up"


def test_a_refused_toxic_update_keeps_the_toxic(api: httpx.Client, echo_server: EchoServer) -> None:
    _create(api, "p", echo_server.address)
    toxic = api.post("/proxies/p/toxics", json={"type": "latency", "attributes": {"latency": 5}}).json()
    for bad in ({"attributes": {"latency": -1}}, {"toxicity": 2}, {"attributes": {"latency": "9"}},
                {"toxicity": True}, [1]):
        _assert_refused(api.patch(f"/proxies/p/toxics/{toxic['name']}", json=bad))
    assert api.get(f"/proxies/p/toxics/{toxic['name']}").json() == toxic
