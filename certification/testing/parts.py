"""The real parts on free 127.0.0.1 ports, for tests: a mock receiver with a chosen personality, a
fault proxy in front of it, and the byte-level TCP fault proxy.

Each starts the way ``certify run`` starts it (the console entry points, ``fault_proxy.tcp``'s
launcher), within a bounded time, and is stopped when its block ends. A part that cannot start
raises ``ServiceUnavailable`` with what went wrong, never hangs. The receiver and the fault proxy
are driven through the harness's own typed clients (``certification.services.Receiver`` and
``Proxy``); the TCP proxy through ``TcpProxy`` below, which speaks Toxiproxy's HTTP API.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from certification.services import Proxy, Receiver, ServiceUnavailable, proxy_process, receiver_process

PERSONALITIES = Path(__file__).resolve().parents[2] / "scenarios" / "receivers"
Stream = Literal["upstream", "downstream"]


def bundled_personalities() -> tuple[str, ...]:
    return tuple(sorted(path.stem for path in PERSONALITIES.glob("*.yaml")))


def personality_file(personality: str | Path) -> Path:
    """A bundled personality by name (``scenarios/receivers/NAME.yaml``), or a behaviour file."""
    if isinstance(personality, str) and personality in bundled_personalities():
        return PERSONALITIES / f"{personality}.yaml"
    path = Path(personality)
    if path.is_file():
        return path.resolve()
    raise ValueError(f"no receiver personality {str(personality)!r}: name a bundled one "
                     f"({', '.join(bundled_personalities())}) or an existing behaviour file")


@contextmanager
def receiver(personality: str | Path, state_dir: Path, *, start_timeout: float) -> Iterator[Receiver]:
    """``mock-receiver serve`` with its admin API on its own port; its ledger in ``state_dir``."""
    behaviour = personality_file(personality)
    try:
        with receiver_process(behaviour, state_dir, start_timeout=start_timeout) as started:
            yield started
    except OSError as exc:  # the console script is missing or not executable
        raise ServiceUnavailable(f"mock-receiver could not be started: {exc.strerror or exc}") from None


@contextmanager
def fault_proxy(upstream: str, work_dir: Path, *, seed: int, start_timeout: float) -> Iterator[Proxy]:
    """``fault-proxy serve`` forwarding to ``upstream`` (a receiver's data URL)."""
    try:
        with proxy_process(upstream, work_dir, seed, start_timeout=start_timeout) as started:
            yield started
    except OSError as exc:
        raise ServiceUnavailable(f"fault-proxy could not be started: {exc.strerror or exc}") from None


def host_port(url: str) -> str:
    """``http://127.0.0.1:41233`` -> ``127.0.0.1:41233`` (what a TCP proxy forwards to)."""
    parts = urlsplit(url)
    if not parts.hostname or parts.port is None:
        raise ValueError(f"{url!r} names no host and port")
    return f"{parts.hostname}:{parts.port}"


def _error_of(response: httpx.Response) -> str:
    """Toxiproxy's own error text (``{"error": ...}``), never the raw body."""
    try:
        document = response.json()
    except ValueError:
        return ""
    error = document.get("error") if isinstance(document, dict) else None
    return f" ({error[:200]})" if isinstance(error, str) else ""


@dataclass(frozen=True, slots=True)
class TcpProxy:
    """A typed client of a Toxiproxy-compatible server (docs/tcp-faults.md): one TCP proxy per
    upstream, byte-level toxics on it. Answers other than 2xx raise ``ServiceUnavailable``."""

    api_url: str
    kind: str
    """``builtin`` (``fault_proxy.tcp``) or ``real`` (a Toxiproxy binary found on the machine)."""
    client: httpx.Client

    def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        try:
            response = self.client.request(method, self.api_url + path, json=body)
        except httpx.HTTPError as exc:
            raise ServiceUnavailable(f"the TCP fault proxy's API is unreachable: {type(exc).__name__}") from None
        if response.status_code >= 400:
            raise ServiceUnavailable(f"the TCP fault proxy refused {method} {path}: {response.status_code}"
                                     f"{_error_of(response)}")
        return response.json() if response.content else None

    def create(self, name: str, upstream: str) -> str:
        """A proxy on a free 127.0.0.1 port forwarding to ``upstream`` (``host:port`` or an http URL);
        returns the address it listens on, ``127.0.0.1:PORT``."""
        target = host_port(upstream) if "://" in upstream else upstream
        created = self._call("POST", "/proxies", {"name": name, "upstream": target, "listen": "127.0.0.1:0"})
        return str(created["listen"])

    def url(self, name: str) -> str:
        """``http://`` + the proxy's listen address: where an HTTP client under test sends."""
        return "http://" + str(self._call("GET", f"/proxies/{name}")["listen"])

    def add_toxic(self, proxy: str, toxic_type: str, attributes: Mapping[str, int], *,
                  stream: Stream = "downstream", toxicity: float = 1.0, name: str | None = None) -> str:
        """Arm a toxic (``reset_peer``, ``limit_data``, ``timeout``, ``latency``, ...); returns its name."""
        body: dict[str, Any] = {"type": toxic_type, "stream": stream, "toxicity": toxicity,
                                "attributes": dict(attributes)}
        if name is not None:
            body["name"] = name
        return str(self._call("POST", f"/proxies/{proxy}/toxics", body)["name"])

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        """A disabled proxy refuses new connections and closes the open ones (Toxiproxy's ``down``)."""
        self._call("POST", f"/proxies/{proxy}", {"enabled": enabled})

    def reset(self) -> None:
        """Every proxy enabled again, every toxic removed."""
        self._call("POST", "/reset")


@contextmanager
def tcp_proxy(*, seed: int, start_timeout: float) -> Iterator[TcpProxy]:
    """A Toxiproxy server: a real one when installed (``TOXIPROXY_SERVER`` or ``toxiproxy-server`` on
    PATH), else ``fault_proxy.tcp``'s, as a process of its own."""
    from fault_proxy.tcp.launcher import LaunchError, ToxiproxyNotFound, start_toxiproxy  # noqa: PLC0415 - FastAPI

    try:
        handle = start_toxiproxy("auto", seed=seed, timeout=start_timeout)
    except (LaunchError, ToxiproxyNotFound, OSError) as exc:
        raise ServiceUnavailable(f"the TCP fault proxy could not be started: {exc}") from None
    try:
        with httpx.Client(timeout=30.0) as client:
            yield TcpProxy(handle.api_url, handle.kind, client)
    finally:
        handle.stop()
