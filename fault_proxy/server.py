"""Run mitmproxy (reverse mode, lazy upstream connections, fully buffered bodies) and the control
API in one process on one asyncio loop.

mitmproxy is embedded in-process rather than run as ``mitmdump -s addon``: the control API must
release held requests (``asyncio.Event`` on the proxy's loop) and read the request log, which is
trivial in-process and would need an IPC channel across processes. The master carries only the
addons a plain-HTTP reverse proxy needs (``DumpMaster`` loads ~30 more, each dispatched on every
hook; with them the measured throughput through the proxy was about 40 % lower).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket

from mitmproxy import options
from mitmproxy.addons import core, next_layer, proxyserver, tlsconfig
from mitmproxy.master import Master

from fault_proxy.addon import FaultAddon
from fault_proxy.api_guards import host_allowlist
from fault_proxy.asgi_server import NoSignalServer, api_config
from fault_proxy.config import HostPort, ServeConfig
from fault_proxy.control_api import create_app, render_refusal
from fault_proxy.state import ProxyState
from fault_proxy.wire import ClientWire, install
from fault_proxy.wire_limits import install_limits


def _bind(hp: HostPort) -> socket.socket:
    family = socket.AF_INET6 if ":" in hp.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((hp.host, hp.port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _mitm_options(config: ServeConfig) -> options.Options:
    return options.Options(
        mode=[f"reverse:{config.upstream_url}@{hp}" for hp in (config.listen, *config.also_listen)],
    )


def _write_ready(path: str, payload: dict[str, object]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(payload, handle)
    os.replace(tmp, path)


class StartupError(RuntimeError):
    """The proxy could not start (e.g. an address in use); the message is for the operator."""


class ReadyFileError(RuntimeError):
    """The ready file could not be written although it was checked at start (e.g. removed since)."""


async def serve(config: ServeConfig) -> int:
    try:
        control_sock = _bind(config.control)
    except OSError as exc:
        raise StartupError(f"cannot listen on control address {config.control}: {exc.strerror}") from None
    control_addr = control_sock.getsockname()
    state = ProxyState(upstream=config.upstream_url, seed=config.seed)
    state.control = f"{control_addr[0]}:{control_addr[1]}"

    master = Master(_mitm_options(config))
    # core: option/command plumbing; proxyserver: listeners and connection handling; next_layer:
    # picks the HTTP layer; tlsconfig: https upstreams. (Startup errors are checked below.)
    server_addon = proxyserver.Proxyserver()  # type: ignore[no-untyped-call]
    master.addons.add(core.Core(), server_addon, next_layer.NextLayer(), tlsconfig.TlsConfig())  # type: ignore[no-untyped-call]
    # connection_strategy=lazy: no upstream connection at client connect, so faults before
    # forwarding never touch the receiver. No stream_large_bodies: every body is buffered, which is
    # what makes "receiver committed, client got nothing" possible. body_size_limit bounds the
    # receiver's answers; requests are bounded (size and time) by fault_proxy.wire_limits.
    master.options.update(  # type: ignore[no-untyped-call]
        connection_strategy="lazy", stream_large_bodies=None, body_size_limit=str(config.limits.max_body_bytes)
    )
    wire = ClientWire(state.log)
    install(wire)
    install_limits(config.limits)
    master.addons.add(FaultAddon(state, wire, config.limits.max_body_bytes))  # type: ignore[no-untyped-call]
    master_task = asyncio.create_task(master.run(), name="mitmproxy")

    allowed = host_allowlist([config.control.host], control_addr[1])
    uv_config = api_config(create_app(state, allowed), render_refusal, config.log_level)
    control = NoSignalServer(uv_config)
    control_task = asyncio.create_task(control.serve(sockets=[control_sock]), name="control-api")

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    wanted = 1 + len(config.also_listen)
    while len(server_addon.listen_addrs()) < wanted or not control.started:
        failures = [str(s.last_exception) for s in server_addon.servers if s.last_exception]
        if failures or master_task.done() or control_task.done():
            await _stop(master, master_task, control, control_task)
            reason = "; ".join(failures) or "the proxy or the control API stopped during startup"
            raise StartupError(f"cannot listen on {config.listen}: {reason}")
        await asyncio.sleep(0.02)
    bound = {str(addr[0]): f"{addr[0]}:{addr[1]}" for addr in server_addon.listen_addrs()}
    state.listen = bound.get(config.listen.host) or next(iter(bound.values()))
    ready: dict[str, object] = {"proxy": state.listen, "control": state.control, "upstream": state.upstream,
                                "pid": os.getpid()}
    if config.also_listen:
        ready["also"] = [bound.get(hp.host, "") for hp in config.also_listen]
    if config.ready_file:
        try:
            _write_ready(config.ready_file, ready)
        except OSError as exc:
            await _stop(master, master_task, control, control_task)
            raise ReadyFileError(f"cannot write --ready-file: {exc.strerror or exc}") from None
    print(json.dumps({"event": "ready", **ready}), flush=True)

    await asyncio.wait(
        [asyncio.create_task(stop.wait()), master_task, control_task], return_when=asyncio.FIRST_COMPLETED
    )
    state.holds.cut_all()
    await _stop(master, master_task, control, control_task)
    return 0


async def _stop(
    master: Master, master_task: asyncio.Task[None], control: NoSignalServer, control_task: asyncio.Task[None]
) -> None:
    control.should_exit = True
    master.shutdown()  # type: ignore[no-untyped-call]
    await asyncio.gather(master_task, control_task, return_exceptions=True)
