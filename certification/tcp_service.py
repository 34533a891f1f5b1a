"""The Toxiproxy-compatible TCP fault proxy as a harness service, between the wire tap and the HTTP
fault proxy: sink -> wire tap -> TCP proxy -> fault proxy -> receiver.

It is started as a process with the same console entry point a user runs (``python -m
fault_proxy.tcp serve``) and driven over its Toxiproxy API only. Placed in front of the HTTP proxy, its
byte-level faults reach the sink as such: a ``reset_peer`` on the upstream stream drops the request and
resets the sink's connection before anything is forwarded, on the downstream stream it resets it after
the receiver committed; ``limit_data`` cuts a request or a response mid-stream; ``latency``,
``bandwidth`` and ``slicer`` stretch an upload or an answer past the sink's timeouts.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from certification.services import (
    START_TIMEOUT_S,
    ServiceUnavailable,
    _stop,
    request_or_unavailable,
    service_client,
)

READY_PREFIX = "fault-proxy tcp API listening on "
PROXY_NAME = "sink"


@dataclass
class TcpProxy:
    process: subprocess.Popen[bytes]
    api_url: str
    listen: tuple[str, int]
    """Where the wire tap connects (the TCP proxy relays to the HTTP fault proxy)."""
    client: httpx.Client

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        response = request_or_unavailable(self.client, "TCP fault proxy API", method, self.api_url + path, json=body)
        if response.status_code >= 400:
            raise ServiceUnavailable(f"TCP fault proxy refused {method} {path}: {response.status_code}")
        return response.json() if response.content else None

    def add_toxic(self, toxic: dict[str, Any]) -> None:
        self._call("POST", f"/proxies/{PROXY_NAME}/toxics", toxic)

    def remove_toxic(self, name: str) -> bool:
        try:
            self._call("DELETE", f"/proxies/{PROXY_NAME}/toxics/{name}")
        except ServiceUnavailable:
            return False
        return True

    def reset(self) -> None:
        """Every toxic removed, every proxy enabled (Toxiproxy's ``POST /reset``)."""
        self._call("POST", "/reset")

    def cut_connections(self) -> None:
        """End every open connection, on the same listen address (Toxiproxy: disabling a proxy closes
        its connections; enabling it listens again). A toxic that still holds a departed client's bytes
        (a slicer trickling a request long after its sink gave up) can then never deliver them into a
        later run: what the sink sent is final before its row is judged."""
        self._call("POST", f"/proxies/{PROXY_NAME}", {"enabled": False})
        self._call("POST", f"/proxies/{PROXY_NAME}", {"enabled": True})


def _read_ready(process: subprocess.Popen[bytes], timeout: float) -> str:
    """The API URL from the server's ready line (stdout), within ``timeout`` seconds."""
    found: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if line.startswith(READY_PREFIX):
                found.append(line.removeprefix(READY_PREFIX))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=timeout)
    if not found:
        process.kill()
        raise ServiceUnavailable("the TCP fault proxy did not announce its API")
    return found[0]


@contextmanager
def tcp_proxy_process(upstream: tuple[str, int], seed: int, *, start_timeout: float = START_TIMEOUT_S
                      ) -> Iterator[TcpProxy]:
    command = [sys.executable, "-m", "fault_proxy.tcp", "serve", "--api", "127.0.0.1:0", "--seed", str(seed)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    with ExitStack() as stack:
        stack.callback(_stop, process)
        api_url = _read_ready(process, start_timeout).rstrip("/")
        client = stack.enter_context(service_client())
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                response = client.post(f"{api_url}/proxies", json={
                    "name": PROXY_NAME, "listen": "127.0.0.1:0", "upstream": f"{upstream[0]}:{upstream[1]}",
                    "enabled": True})
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise ServiceUnavailable("the TCP fault proxy's API did not answer") from None
                time.sleep(0.05)
        if response.status_code not in (200, 201):
            raise ServiceUnavailable(f"the TCP fault proxy refused its proxy: {response.status_code}")
        host, _, port = str(response.json()["listen"]).rpartition(":")
        yield TcpProxy(process, api_url, (host.strip("[]") or "127.0.0.1", int(port)), client)
