"""Run the API server and every proxy on one asyncio event loop (uvicorn serves the API).

`serve` is the foreground entry point (CLI, `python -m fault_proxy.tcp`); `BuiltinServerThread`
runs the same thing on a background thread for in-process use.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Callable

from fault_proxy.api_guards import host_allowlist
from fault_proxy.asgi_server import NoSignalServer, api_config
from fault_proxy.tcp.addresses import join_host_port
from fault_proxy.tcp.api import create_app, render_refusal
from fault_proxy.tcp.registry import ProxyRegistry

READY_PREFIX = "fault-proxy tcp API listening on "
_STARTUP_POLL_S = 0.01


class ServerStartError(RuntimeError):
    """The API server could not start (for example: the port is taken)."""


async def serve(host: str, port: int, *, seed: int | None = None,
                on_ready: Callable[[str], None] | None = None,
                stop_event: asyncio.Event | None = None, handle_signals: bool = False,
                log_level: str = "warning") -> None:
    """Serve the Toxiproxy API on host:port until cancelled or `stop_event` is set.

    `on_ready` receives the API URL once the socket is bound (port 0 resolves to the real port).
    `handle_signals` (main thread only): SIGINT/SIGTERM set the stop event, so the process ends
    normally (exit 0) after closing every proxy.
    """
    # Bind here rather than inside uvicorn: uvicorn turns a bind failure into sys.exit(1) from a
    # task, while an OSError raised here reaches the caller as a clear error.
    listener = _bind(host, port)
    registry = ProxyRegistry(seed=seed)
    allowed = host_allowlist([host], listener.getsockname()[1])
    server = NoSignalServer(api_config(create_app(registry, allowed), render_refusal, log_level))
    if handle_signals:
        stop_event = stop_event or asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop_event.set)
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        while not server.started:
            if task.done():
                raise ServerStartError(f"could not start the API server on {host}:{port}")
            await asyncio.sleep(_STARTUP_POLL_S)
        bound_port = listener.getsockname()[1]
        if on_ready is not None:
            on_ready(f"http://{join_host_port(host, bound_port)}")
        if stop_event is None:
            await task
        else:
            waiter = asyncio.create_task(stop_event.wait())
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            server.should_exit = True
            await task
    finally:
        server.should_exit = True
        if not task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await registry.close_all()
        listener.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ServerStartError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(False)
    return sock


class BuiltinServerThread:
    """The built-in server on a daemon thread with its own event loop."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, seed: int | None = None) -> None:
        self._host, self._port, self._seed = host, port, seed
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.api_url = ""
        self._thread = threading.Thread(target=self._run, name="fault-proxy-tcp", daemon=True)

    def start(self, timeout: float = 10.0) -> str:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise ServerStartError("the built-in server did not start in time")
        if self._error is not None:
            raise ServerStartError(str(self._error))
        return self.api_url

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await serve(self._host, self._port, seed=self._seed, on_ready=self._mark_ready,
                        stop_event=self._stop)

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
        finally:
            self._ready.set()

    def _mark_ready(self, url: str) -> None:
        self.api_url = url
        self._ready.set()

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)
