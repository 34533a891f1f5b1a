"""The receiver and the fault proxy as separate processes on free 127.0.0.1 ports.

The harness talks to them only over their HTTP APIs (admin API of the receiver, control API of
the proxy) and starts them with the same console entry points a user runs, so a certification run
exercises exactly what ships. Every state-changing admin/control call carries the
``X-Restproof-Admin: 1`` header both servers require against cross-site requests.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
ADMIN_HEADERS = {"X-Restproof-Admin": "1"}
START_TIMEOUT_S = 120.0
"""Generous: on a loaded 2-core machine N lanes start their servers at the same moment."""
PAGE_LIMIT = 1000
CONNECT_RETRIES = 3
"""A call whose connection is refused is retried (httpx retries connect failures only: nothing was
sent, so even a non-idempotent call such as ``clock/advance`` is safe to repeat). On a 2-core machine
with twelve lanes and their sink processes, a receiver or proxy sometimes refuses one connection."""


KEEPALIVE_EXPIRY_S = 1.0
"""How long the client keeps an idle connection for reuse. Both services close an idle keep-alive
connection after 5 s (uvicorn's ``timeout_keep_alive``), which is also httpx's default expiry: at that
default a call that reuses a connection at second 5 races the server's close and reads
``RemoteProtocolError`` (seen once in a 12-lane run, on ``GET /log``). A shorter expiry never
offers a connection the server may be closing."""
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD"})


def service_client() -> httpx.Client:
    """The harness's client of its own services' admin and control APIs."""
    transport = httpx.HTTPTransport(retries=CONNECT_RETRIES, limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S))
    return httpx.Client(timeout=30.0, transport=transport)


def request_or_unavailable(client: httpx.Client, service: str, method: str, url: str, **options: Any
                           ) -> httpx.Response:
    """Every call to a harness service: a transport failure is the service being unavailable (exit 3,
    the call named), never an internal error. A read-only call whose connection closed before any
    answer is sent once more on a new connection: reading twice changes nothing (a state-changing
    call is not repeated, since the service may have acted on it)."""
    try:
        try:
            return client.request(method, url, **options)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):  # closed unanswered, or reset
            if method not in IDEMPOTENT_METHODS:
                raise
            return client.request(method, url, **options)
    except httpx.HTTPError as exc:
        raise ServiceUnavailable(f"{service} unreachable ({method} {urlsplit(url).path}): "
                                 f"{type(exc).__name__}") from None


class ServiceUnavailable(RuntimeError):
    """A harness service did not start or stopped answering (exit class 3 of ``certify``)."""


class RuleRefused(ValueError):
    """The fault proxy refused a catalog row's rule as invalid: invalid input (exit 2), not a harness outage."""


def _wait_for_file(path: Path, process: subprocess.Popen[bytes], what: str, timeout: float = START_TIMEOUT_S
                   ) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            try:
                document = json.loads(path.read_text())
            except ValueError:
                document = None  # written atomically by both servers, but be patient with a reader race
            if isinstance(document, dict):
                return document
        if process.poll() is not None:
            raise ServiceUnavailable(f"{what} exited with status {process.returncode} before it was ready")
        time.sleep(0.05)
    process.kill()
    raise ServiceUnavailable(f"{what} was not ready within {timeout:g} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Receiver:
    process: subprocess.Popen[bytes]
    data_url: str
    admin_url: str
    client: httpx.Client
    behaviour_file: Path | None = None
    state_dir: Path | None = None

    def crash_and_restart(self) -> None:
        """SIGKILL the receiver (a crash, nothing flushed beyond what it committed) and start it again on
        the same ports and the same durable ledger."""
        assert self.behaviour_file is not None and self.state_dir is not None
        self.process.kill()
        self.process.wait()
        data_port = int(urlsplit(self.data_url).port or 0)
        admin_port = int(urlsplit(self.admin_url).port or 0)
        self.process = _start_receiver(self.behaviour_file, self.state_dir, data_port, admin_port)
        _wait_for_file(self.state_dir / "endpoints.json", self.process, "mock-receiver (restarted)")

    def _pages(self, path: str, **filters: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        after: int | None = None
        while True:
            params: dict[str, Any] = {"limit": PAGE_LIMIT, **filters}
            if after is not None:
                params["after_id"] = after
            page = self._get(path, params)
            items.extend(page["items"])
            after = page.get("next_after")
            if after is None:
                return items

    def _send(self, method: str, url: str, **options: Any) -> httpx.Response:
        return request_or_unavailable(self.client, "receiver", method, url, **options)

    def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        response = self._send("GET", self.admin_url + path, params=params)
        if response.status_code != 200:
            raise ServiceUnavailable(f"receiver admin API answered {response.status_code} for {path}")
        return response.json()

    def in_flight(self) -> int:
        """Data requests the receiver is still working on (``GET /_admin/stats``)."""
        value = self._get("/_admin/stats").get("data_requests_in_flight")
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ServiceUnavailable("the receiver does not report its data requests in flight")
        return value

    def settle(self, timeout_s: float, poll_s: float = 0.05, max_poll_s: float = 1.0) -> int:
        """Wait (at most ``timeout_s``) until the receiver works on no data request; the number it is
        still working on then. Its ledger read before that could miss an effect about to be applied.
        The pause between polls doubles up to ``max_poll_s``: a request held 34 s costs about 40 polls
        of the receiver (each a request it serves), not 340, and a short wait stays short."""
        deadline = time.monotonic() + timeout_s
        pause = poll_s
        while True:
            count = self.in_flight()
            now = time.monotonic()
            if count == 0 or now >= deadline:
                return count
            time.sleep(min(pause, deadline - now))
            pause = min(pause * 2, max_poll_s)

    def requests(self) -> list[dict[str, Any]]:
        return self._pages("/_admin/requests")

    def effects(self) -> list[dict[str, Any]]:
        return self._pages("/_admin/effects")

    def jobs(self) -> list[dict[str, Any]]:
        return self._pages("/_admin/jobs")

    def rows(self) -> list[dict[str, Any]]:
        """Every row the receiver holds (its canonical encoding, base64), for the content check."""
        return self._pages("/_admin/rows")

    def behaviour(self) -> dict[str, Any]:
        document: dict[str, Any] = self._get("/_admin/behaviour")
        return document

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self._send("POST", self.admin_url + path, json=body or {}, headers=ADMIN_HEADERS)
        if response.status_code >= 400:
            raise ServiceUnavailable(f"receiver admin API refused {path}: {response.status_code}")
        return response.json() if response.content else None

    def put_behaviour(self, document: dict[str, Any]) -> None:
        response = self._send("PUT", self.admin_url + "/_admin/behaviour", json=document, headers=ADMIN_HEADERS)
        if response.status_code == 422:
            raise RuleRefused("the receiver refused the row's behaviour change as invalid (422)")
        if response.status_code >= 400:
            raise ServiceUnavailable(f"receiver admin API refused the behaviour: {response.status_code}")

    def cancel_job(self, job_id: str) -> bool:
        """Cancel a job from outside (an operator at the receiver); False when it was already terminal."""
        response = self._send("POST", f"{self.admin_url}/_admin/jobs/{job_id}/cancel", headers=ADMIN_HEADERS)
        if response.status_code == 409:
            return False
        if response.status_code >= 400:
            raise ServiceUnavailable(f"receiver admin API refused a cancel: {response.status_code}")
        return True

    def reset(self) -> None:
        self.post("/_admin/reset")

    def advance_clock(self, seconds: float) -> None:
        self.post("/_admin/clock/advance", {"seconds": seconds})


def _start_receiver(behaviour: Path, state_dir: Path, port: int, admin_port: int) -> subprocess.Popen[bytes]:
    (state_dir / "endpoints.json").unlink(missing_ok=True)
    command = [
        str(Path(sys.executable).with_name("mock-receiver")), "serve", "--host", "127.0.0.1", "--port", str(port),
        "--admin-port", str(admin_port), "--behaviour", str(behaviour), "--state-dir", str(state_dir),
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@contextmanager
def receiver_process(behaviour: Path, state_dir: Path, *, start_timeout: float = START_TIMEOUT_S
                     ) -> Iterator[Receiver]:
    state_dir.mkdir(parents=True, exist_ok=True)
    process = _start_receiver(behaviour, state_dir, 0, 0)
    with ExitStack() as stack:
        stack.callback(_stop, process)
        info = _wait_for_file(state_dir / "endpoints.json", process, "mock-receiver", start_timeout)
        client = stack.enter_context(service_client())
        receiver = Receiver(process, str(info["data_url"]), str(info["admin_url"]), client, behaviour, state_dir)
        stack.callback(lambda: _stop(receiver.process))  # the one running now, after any restart
        yield receiver


@dataclass
class Proxy:
    process: subprocess.Popen[bytes]
    url: str
    control_url: str
    client: httpx.Client
    also: tuple[str, ...] = ()
    """The extra HOST:PORT addresses it listens on."""

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        headers = ADMIN_HEADERS if method != "GET" else None
        response = request_or_unavailable(self.client, "fault-proxy control API", method, self.control_url + path,
                                          json=body, headers=headers)
        if response.status_code == 422 and path == "/rules":
            raise RuleRefused("the fault proxy refused the rule as invalid (422)")
        if response.status_code >= 400:
            raise ServiceUnavailable(f"fault-proxy control API refused {method} {path}: {response.status_code}")
        return response.json() if response.content else None

    def add_rule(self, rule: dict[str, Any]) -> dict[str, Any]:
        document: dict[str, Any] = self._call("POST", "/rules", rule)
        return document

    def reset(self, seed: int | None = None) -> None:
        self._call("POST", "/reset", {} if seed is None else {"seed": seed})

    def log(self) -> list[dict[str, Any]]:
        return self.log_with_gaps()[0]

    def log_with_gaps(self) -> tuple[list[dict[str, Any]], int]:
        """Every entry kept, and how many the proxy dropped (a log with a gap proves nothing). A page
        that reaches the proxy's ``next_seq`` is the end: no second call to learn that it is empty."""
        entries: list[dict[str, Any]] = []
        since, dropped = 0, 0
        while True:
            page = self._call("GET", f"/log?since={since}")
            entries.extend(page["entries"])
            dropped = max(dropped, int(page.get("dropped") or 0))
            next_seq = int(page["next_seq"])
            if not page["entries"] or int(page["entries"][-1]["seq"]) >= next_seq - 1:
                return entries, dropped
            since = int(page["entries"][-1]["seq"])

    def rule(self, rule_id: str) -> dict[str, Any]:
        document: dict[str, Any] = self._call("GET", f"/rules/{rule_id}")
        return document

    def delete_rule(self, rule_id: str) -> None:
        self._call("DELETE", f"/rules/{rule_id}")

    def held(self) -> list[dict[str, Any]]:
        document: list[dict[str, Any]] = self._call("GET", "/held")["held"]
        return document

    def release(self, hold_id: str) -> None:
        self._call("POST", f"/held/{hold_id}/release")


@contextmanager
def proxy_process(upstream: str, work_dir: Path, seed: int, also_listen: tuple[str, ...] = (), *,
                  start_timeout: float = START_TIMEOUT_S) -> Iterator[Proxy]:
    """``also_listen``: more addresses of the same proxy (host:0 picks a port), in ``Proxy.also``."""
    work_dir.mkdir(parents=True, exist_ok=True)
    ready = work_dir / "proxy-ready.json"
    ready.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "fault_proxy", "serve", "--listen", "127.0.0.1:0", "--upstream", upstream,
        "--control", "127.0.0.1:0", "--seed", str(seed), "--ready-file", str(ready),
    ]
    for address in also_listen:
        command.extend(["--also-listen", address])
    if (urlsplit(upstream).hostname or "") not in LOOPBACK or also_listen:
        command.append("--allow-non-loopback")  # a live receiver, or a veth address of a worker namespace
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with ExitStack() as stack:
        stack.callback(_stop, process)
        info = _wait_for_file(ready, process, "fault-proxy", start_timeout)
        client = stack.enter_context(service_client())
        yield Proxy(process, f"http://{info['proxy']}", f"http://{info['control']}", client,
                    tuple(str(address) for address in info.get("also", ())))
