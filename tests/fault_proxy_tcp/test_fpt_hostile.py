"""Hostile input against the Toxiproxy-compatible API of the built-in server, run as a process.

Every answer must be a Toxiproxy-shaped 4xx (`{"error", "status"}`) or a success, never a 5xx; the
process's stderr must hold no traceback; the API must keep answering. Cross-site requests
(browser User-Agent, foreign Origin, non-JSON bodies) are refused while toxiproxy-python, which
sends none of these, keeps working (its round trip runs here too, after the hostile corpus).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fpt_helpers import EchoServer, Served, echo_roundtrip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toxiproxy import Toxiproxy

pytestmark = pytest.mark.timeout(180)


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
        client.post("/reset")
        for name in client.get("/proxies").json():
            client.delete(f"/proxies/{name}")


def _assert_toxiproxy_error(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text[:400]
    body = response.json()
    assert body["status"] == status and isinstance(body["error"], str)
    assert len(response.content) < 2000  # never an echo of a huge input


def _still_answers(served: Served) -> None:
    assert httpx.get(f"{served.url}/version", timeout=3).status_code == 200


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _proxy(name: Any, upstream: Any = "127.0.0.1:9", listen: Any = "127.0.0.1:0") -> bytes:
    return json.dumps({"name": name, "upstream": upstream, "listen": listen}).encode()


CORPUS: list[tuple[str, str, bytes, int]] = [
    ("POST", "/proxies", _deep(100_000), 400),
    ("POST", "/populate", _deep(100_000), 400),
    ("POST", "/proxies", _proxy("p", upstream="127.0.0.1:" + "9" * 5000), 400),
    ("POST", "/proxies", _proxy("p", listen="127.0.0.1:" + "9" * 5000), 400),
    ("POST", "/proxies", _proxy("p", upstream="127.0.0.1:99999"), 400),
    ("POST", "/proxies", _proxy("a/b"), 400),  # could never be addressed as /proxies/a/b
    ("POST", "/proxies", _proxy("a?b"), 400),
    ("POST", "/proxies", _proxy(".."), 400),
    ("POST", "/proxies", _proxy("x" * 129), 400),
    ("POST", "/proxies", _proxy("n\u00e9"), 400),
    ("POST", "/proxies", b'{"name": "s", "upstream": "\\ud800:80"}', 400),
    ("POST", "/proxies", _proxy("s", upstream="ex ample:80"), 400),
    ("POST", "/proxies", _proxy("s", listen="no-such-host.invalid:0"), 400),
    ("POST", "/proxies", _proxy(["list"]), 400),
    ("POST", "/proxies", b'{"name": "x", "upstream": "127.0.0.1:9", "enabled": "yes"}', 400),
    ("POST", "/proxies", b"\xff\xfe", 400),
    ("POST", "/populate", json.dumps([{"name": f"p{i}", "upstream": "127.0.0.1:9"} for i in range(1001)]).encode(),
     400),
]


@pytest.mark.parametrize(("method", "path", "body", "status"), CORPUS)
def test_hostile_bodies_get_a_toxiproxy_4xx(served: Served, api: httpx.Client, method: str, path: str,
                                            body: bytes, status: int) -> None:
    response = api.request(method, path, content=body, headers={"Content-Type": "application/json"})
    _assert_toxiproxy_error(response, status)
    _still_answers(served)


TOXIC_CORPUS: list[tuple[dict[str, Any] | bytes, int]] = [
    (b'{"type": "latency", "attributes": ' + b'{"a": ' * 3000 + b"1" + b"}" * 3000 + b"}", 400),
    ({"type": "latency", "attributes": {"latency": 2**63}}, 400),
    ({"type": "latency", "attributes": {"latency": -1}}, 400),
    ({"type": "latency", "attributes": {"latency": "10"}}, 400),
    ({"type": "latency", "toxicity": 10**400}, 400),
    ({"type": "latency", "name": "t/x"}, 400),
    ({"type": {"nested": True}}, 400),
    ({"type": "latency", "stream": ["up"]}, 400),
    (b'{"type": "latency", "toxicity": NaN}', 400),
    (b'{"type": "latency", "toxicity": Infinity}', 400),
]


@pytest.mark.parametrize(("body", "status"), TOXIC_CORPUS)
def test_hostile_toxics_get_a_toxiproxy_4xx(served: Served, api: httpx.Client, echo_server: EchoServer,
                                            body: dict[str, Any] | bytes, status: int) -> None:
    assert api.post("/proxies", content=_proxy("tox", upstream=echo_server.address),
                    headers={"Content-Type": "application/json"}).status_code == 201
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = api.post("/proxies/tox/toxics", content=raw, headers={"Content-Type": "application/json"})
    _assert_toxiproxy_error(response, status)
    assert api.get("/proxies/tox/toxics").json() == []
    _still_answers(served)


def test_a_50_mb_name_is_refused_before_it_is_read(served: Served) -> None:
    with socket.create_connection((served.host, served.port), timeout=10) as sock:
        sock.sendall(b"POST /proxies HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n" % served.port
                     + b"Content-Length: 52428800\r\n\r\n{\"name\": \"xxxx")
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    _still_answers(served)


def test_absurd_content_length_is_a_400(served: Served) -> None:
    with socket.create_connection((served.host, served.port), timeout=10) as sock:
        sock.sendall(b"POST /proxies HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n" % served.port
                     + b"Content-Length: 99999999999999999999\r\n\r\n{}")
        answer = sock.recv(65536)
    assert answer.split(b" ", 2)[1] in (b"400", b"413"), answer[:200]
    _still_answers(served)


def test_a_proxy_dialling_itself_is_refused(api: httpx.Client) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    response = api.post("/proxies", json={"name": "loop", "listen": f"127.0.0.1:{port}",
                                          "upstream": f"127.0.0.1:{port}"})
    _assert_toxiproxy_error(response, 400)


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ({"User-Agent": "Mozilla/5.0"}, None, 403),  # real Toxiproxy's own guard
        ({"Origin": "http://evil.example"}, None, 403),
        ({"Origin": "null"}, None, 403),
        ({"Host": "evil.example"}, None, 403),  # DNS rebinding onto 127.0.0.1
        ({"Content-Type": "text/plain"}, b'{"name": "csrf", "upstream": "127.0.0.1:9"}', 415),
        ({"Content-Type": "application/x-www-form-urlencoded"}, b"name=csrf&upstream=127.0.0.1:9", 415),
    ],
)
def test_cross_site_requests_are_refused(api: httpx.Client, headers: dict[str, str], body: bytes | None,
                                         status: int) -> None:
    path = "/reset" if body is None else "/proxies"
    _assert_toxiproxy_error(api.post(path, content=body, headers=headers), status)
    assert "csrf" not in api.get("/proxies").json()


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
_fields = st.fixed_dictionaries({}, optional={
    "name": st.text(max_size=12) | _json, "upstream": st.sampled_from(["127.0.0.1:9", ":1", "x:0"]) | _json,
    "listen": st.sampled_from(["127.0.0.1:0", ":0"]) | _json, "enabled": st.booleans() | _json,
    "type": st.sampled_from(["latency", "timeout", "slicer", "limit_data"]) | _json,
    "stream": st.sampled_from(["upstream", "downstream"]) | _json, "toxicity": _json,
    "attributes": st.dictionaries(st.sampled_from(["latency", "jitter", "average_size", "size_variation", "bytes",
                                                   "timeout", "rate", "delay"]), _json, max_size=3) | _json,
})
_route = st.sampled_from([
    ("POST", "/proxies"), ("POST", "/populate"), ("POST", "/proxies/fz"), ("PATCH", "/proxies/fz"),
    ("POST", "/proxies/fz/toxics"), ("POST", "/proxies/fz/toxics/latency_downstream"),
    ("GET", "/proxies/{name}"), ("DELETE", "/proxies/{name}"), ("GET", "/proxies/fz/toxics/{name}"),
])


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(route=_route, body=_fields | _json, name=st.text(st.characters(exclude_categories=["Cs"]), max_size=16))
def test_generated_requests_never_cause_server_errors(served: Served, route: tuple[str, str], body: Any,
                                                      name: str) -> None:
    method, path = route
    with httpx.Client(base_url=served.url, timeout=10) as client:
        if "fz" not in client.get("/proxies").json():
            client.post("/proxies", json={"name": "fz", "upstream": "127.0.0.1:9"})
        url = path.replace("{name}", quote(name, safe="") or "n")
        content = None if method in ("GET", "DELETE") else json.dumps(body).encode()
        response = client.request(method, url, content=content, headers={"Content-Type": "application/json"})
        assert response.status_code < 500, response.text[:400]
        if response.status_code >= 400:
            assert set(response.json()) == {"error", "status"}
        for proxy_name in list(client.get("/proxies").json())[:50]:
            if proxy_name != "fz":
                client.delete(f"/proxies/{proxy_name}")


def test_toxiproxy_python_still_drives_it_after_the_corpus(served: Served, echo_server: EchoServer) -> None:
    toxi = Toxiproxy()
    toxi.update_api_consumer(served.host, served.port)
    toxi.destroy_all()
    proxy = toxi.create(upstream=echo_server.address, name="after")
    proxy.add_toxic(type="latency", attributes={"latency": 1})
    assert echo_roundtrip(proxy.listen, b"ping")[0] == b"ping"
    toxi.reset()
    assert proxy.destroy() is True
