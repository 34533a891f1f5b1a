"""DNS rebinding against the Toxiproxy-compatible API, on a server process: only allowlisted Host
values pass (the loopback literals and the name the API was started on, with its own port), on every
route, reads included, and a refused request changes nothing."""

from __future__ import annotations

import httpx
import pytest
from fpt_helpers import Served

pytestmark = pytest.mark.timeout(120)


def _foreign_hosts(port: int) -> list[str]:
    return [
        f"127.0.0.1.rebind.evil.example:{port}", "127.0.0.1.rebind.evil.example", f"evil.example:{port}",
        f"127.0.0.1:{port + 1}", "127.0.0.1", "localhost", f"127.1:{port}", f"127.0.0.3:{port}",
        f"0x7f000001:{port}", f"localhost.:{port}", f"[::ffff:127.0.0.1]:{port}", f"127.0.0.1:{port}.evil.example",
    ]


def test_the_toxiproxy_api_refuses_foreign_hosts_on_every_route() -> None:
    served = Served("--api", "127.0.0.2:0")
    try:
        with httpx.Client(base_url=served.url, timeout=5) as client:
            assert client.post("/proxies", json={"name": "keep", "upstream": "127.0.0.1:9"}).status_code == 201
            before = client.get("/proxies").json()
            for host in _foreign_hosts(served.port):
                for method, path in [("GET", "/version"), ("GET", "/proxies"), ("GET", "/proxies/keep"),
                                     ("GET", "/proxies/keep/toxics"), ("POST", "/reset"),
                                     ("DELETE", "/proxies/keep"), ("POST", "/populate")]:
                    body = b"[]" if path == "/populate" else None
                    response = client.request(method, path, content=body,
                                              headers={"Host": host, "Content-Type": "application/json"})
                    assert response.status_code == 403, (host, method, path, response.text)
                    assert set(response.json()) == {"error", "status"}
            assert client.get("/proxies").json() == before
            for name in ("127.0.0.1", "localhost", "[::1]", "127.0.0.2"):
                assert client.get("/version", headers={"Host": f"{name}:{served.port}"}).status_code == 200
    finally:
        log = served.stop()
    assert served.process.returncode == 0 and "Traceback" not in log
