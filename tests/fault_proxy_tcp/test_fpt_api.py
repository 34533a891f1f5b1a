"""The HTTP API: routes, status codes and JSON shapes that Toxiproxy clients rely on.

Checked against the built-in server and, when installed, the real one, with raw httpx (exact
shapes) and with toxiproxy-python 0.1.1 (its exception mapping: 409/404/400).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import toxiproxy.exceptions
from fpt_helpers import EchoServer, connect, echo_roundtrip
from toxiproxy import Toxiproxy

from fault_proxy.tcp.launcher import ToxiproxyHandle

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def api(toxiproxy_server: ToxiproxyHandle, toxi: Toxiproxy) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=toxiproxy_server.api_url, timeout=5.0) as client:
        yield client


def _create(api: httpx.Client, name: str, upstream: str) -> dict[str, object]:
    response = api.post("/proxies", json={"name": name, "upstream": upstream, "listen": "127.0.0.1:0"})
    assert response.status_code == 201, response.text
    body: dict[str, object] = response.json()
    return body


def test_proxy_create_show_list_shapes(api: httpx.Client, echo_server: EchoServer) -> None:
    created = _create(api, "shape", echo_server.address)
    assert set(created) == {"name", "listen", "upstream", "enabled", "toxics"}
    assert created["name"] == "shape"
    assert created["upstream"] == echo_server.address
    assert created["enabled"] is True
    assert created["toxics"] == []
    host, _, port = str(created["listen"]).rpartition(":")
    assert host == "127.0.0.1" and int(port) > 0  # ":0" is resolved to the bound port
    assert api.get("/proxies/shape").json() == created
    assert api.get("/proxies").json() == {"shape": created}


def test_errors_use_toxiproxy_status_codes_and_shape(api: httpx.Client, echo_server: EchoServer) -> None:
    _create(api, "dup", echo_server.address)
    duplicate = api.post("/proxies", json={"name": "dup", "upstream": echo_server.address})
    assert duplicate.status_code == 409
    assert duplicate.json() == {"error": "proxy already exists", "status": 409}
    missing = api.get("/proxies/nope")
    assert missing.status_code == 404
    assert missing.json() == {"error": "proxy not found", "status": 404}
    no_upstream = api.post("/proxies", json={"name": "x"})
    assert no_upstream.status_code == 400
    assert no_upstream.json()["error"].startswith("missing required field")
    assert api.post("/proxies", content=b"{not json",
                    headers={"Content-Type": "application/json"}).status_code == 400
    bad_type = api.post("/proxies/dup/toxics", json={"type": "gremlins"})
    assert bad_type.status_code == 400
    assert bad_type.json()["error"] == "invalid toxic type"
    bad_stream = api.post("/proxies/dup/toxics", json={"type": "latency", "stream": "sideways"})
    assert bad_stream.status_code == 400
    assert api.get("/proxies/dup/toxics/none").status_code == 404
    assert api.delete("/proxies/dup/toxics/none").status_code == 404


def test_toxic_crud_shapes_and_partial_update(api: httpx.Client, echo_server: EchoServer) -> None:
    _create(api, "tox", echo_server.address)
    created = api.post("/proxies/tox/toxics", json={"type": "latency", "attributes": {"latency": 40}})
    assert created.status_code == 200  # Toxiproxy answers 200 here, not 201
    assert created.json() == {
        "attributes": {"latency": 40, "jitter": 0},
        "name": "latency_downstream",
        "type": "latency",
        "stream": "downstream",
        "toxicity": 1.0,
    }
    assert api.post("/proxies/tox/toxics", json={"type": "latency"}).status_code == 409
    updated = api.post("/proxies/tox/toxics/latency_downstream", json={"attributes": {"jitter": 5}})
    assert updated.status_code == 200
    assert updated.json()["attributes"] == {"latency": 40, "jitter": 5}  # latency kept
    assert updated.json()["toxicity"] == 1.0
    patched = api.patch("/proxies/tox/toxics/latency_downstream", json={"toxicity": 0.25})
    assert patched.json()["toxicity"] == 0.25
    assert api.get("/proxies/tox/toxics").json() == [patched.json()]
    assert api.get("/proxies/tox").json()["toxics"] == [patched.json()]
    assert api.delete("/proxies/tox/toxics/latency_downstream").status_code == 204
    assert api.get("/proxies/tox/toxics").json() == []


def test_toxic_list_puts_upstream_before_downstream(api: httpx.Client, echo_server: EchoServer) -> None:
    _create(api, "order", echo_server.address)
    api.post("/proxies/order/toxics", json={"type": "limit_data", "stream": "downstream"})
    api.post("/proxies/order/toxics", json={"type": "slicer", "stream": "upstream",
                                             "attributes": {"average_size": 10}})
    names = [t["name"] for t in api.get("/proxies/order/toxics").json()]
    assert names == ["slicer_upstream", "limit_data_downstream"]


def test_proxy_update_disable_enable_and_delete(api: httpx.Client, echo_server: EchoServer) -> None:
    created = _create(api, "upd", echo_server.address)
    disabled = api.post("/proxies/upd", json={"enabled": False})
    assert disabled.status_code == 200
    assert disabled.json()["enabled"] is False
    assert disabled.json()["listen"] == created["listen"]
    enabled = api.patch("/proxies/upd", json={"enabled": True})
    assert enabled.json()["enabled"] is True
    assert enabled.json()["listen"] == created["listen"]  # comes back on the same address
    assert echo_roundtrip(str(created["listen"]), b"same")[0] == b"same"
    assert api.delete("/proxies/upd").status_code == 204
    assert api.get("/proxies/upd").status_code == 404
    assert api.delete("/proxies/upd").status_code == 404


def test_populate_creates_and_keeps_unchanged_proxies(api: httpx.Client, echo_server: EchoServer) -> None:
    body: list[dict[str, object]] = [{"name": "pop1", "upstream": echo_server.address, "listen": "127.0.0.1:0"},
                                     {"name": "pop2", "upstream": echo_server.address,
                                      "listen": "127.0.0.1:0", "enabled": False}]
    response = api.post("/populate", json=body)
    assert response.status_code == 201
    proxies = response.json()["proxies"]
    assert [p["name"] for p in proxies] == ["pop1", "pop2"]
    assert [p["enabled"] for p in proxies] == [True, False]
    # Same name, listen and upstream: the proxy is kept (its open connections too).
    unchanged = {**body[0], "listen": proxies[0]["listen"]}
    with connect(proxies[0]["listen"]) as open_connection:
        again = api.post("/populate", json=[unchanged])
        assert again.status_code == 201
        assert again.json()["proxies"][0]["listen"] == proxies[0]["listen"]
        open_connection.sendall(b"still")
        assert open_connection.recv(16) == b"still"
    assert set(api.get("/proxies").json()) == {"pop1", "pop2"}


def test_version_and_reset(api: httpx.Client) -> None:
    version = api.get("/version")
    assert version.status_code == 200
    # Toxiproxy 2.x answers {"version": "..."}; very old releases answered plain text.
    if version.headers.get("content-type", "").startswith("application/json"):
        assert isinstance(version.json()["version"], str)
    else:
        assert version.text.strip()
    assert api.post("/reset").status_code == 204


def test_browsers_are_refused(api: httpx.Client) -> None:
    response = api.get("/proxies", headers={"User-Agent": "Mozilla/5.0"})
    assert response.status_code == 403


def test_toxiproxy_python_client_round_trip(toxi: Toxiproxy, echo_server: EchoServer) -> None:
    assert toxi.running() is True
    assert b"version" in toxi.version()
    proxy = toxi.create(upstream=echo_server.address, name="client")
    with pytest.raises(toxiproxy.exceptions.ProxyExists):
        toxi.create(upstream=echo_server.address, name="client")
    proxy.add_toxic(type="latency", attributes={"latency": 5})
    proxy.add_toxic(type="bandwidth", stream="upstream", name="slow", toxicity=0.5,
                    attributes={"rate": 100})
    toxics = proxy.toxics()
    assert set(toxics) == {"latency_downstream", "slow"}
    assert toxics["slow"].stream == "upstream"
    assert toxics["slow"].toxicity == 0.5
    assert toxics["slow"].attributes == {"rate": 100}
    with pytest.raises(toxiproxy.exceptions.InvalidToxic):
        proxy.add_toxic(type="no_such_toxic")
    with pytest.raises(toxiproxy.exceptions.NotFound):
        proxy.destroy_toxic("missing")
    assert proxy.destroy_toxic("slow") is True
    assert toxi.populate([{"name": "client", "upstream": echo_server.address,
                           "listen": proxy.listen}]) == []  # unchanged, so nothing re-created
    assert proxy.destroy() is True
    assert toxi.get_proxy("client") is None
