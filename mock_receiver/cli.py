"""`mock-receiver` command line: serve a behaviour, or validate a behaviour file."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import socket
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
import uvicorn
from fastapi import FastAPI

from mock_receiver import log_redaction
from mock_receiver.app import LEDGER_FILE, create_admin_app, create_data_app, open_receiver
from mock_receiver.auth_spec import MutualTlsAuth
from mock_receiver.behaviour import BehaviourError, load_behaviour_file
from mock_receiver.guard import NoTracebacks
from mock_receiver.host_guard import WILDCARD_NAMES, host_name, is_host_name
from mock_receiver.ledger import LedgerRefused
from mock_receiver.listener_bounds import BodyDeadlines, ListenerBounds, bounded_protocol
from mock_receiver.secret_sources import AuthConfigError
from mock_receiver.state_files import StateFileRefused, check_files, ledger_files, write_new_file
from mock_receiver.tls import (
    TlsMaterial,
    TlsSetupError,
    server_context,
    tls_material_for,
    uvicorn_protocol,
    uvicorn_tls_options,
)

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Vendor-emulating REST receiver with a "
                  "durable ground-truth effect ledger.")

ENDPOINTS_FILE = "endpoints.json"
EXIT_INVALID_INPUT = 2
EXIT_UNAVAILABLE = 3


class Durability(StrEnum):
    FULL = "full"
    NORMAL = "normal"


class HttpImpl(StrEnum):
    AUTO = "auto"
    H11 = "h11"
    HTTPTOOLS = "httptools"


class LoopImpl(StrEnum):
    AUTO = "auto"
    ASYNCIO = "asyncio"
    UVLOOP = "uvloop"


class _CompanionServer(uvicorn.Server):
    """A second listener in the same process; the primary server owns signal handling."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _PrimaryServer(uvicorn.Server):
    companion: uvicorn.Server | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # uvicorn re-raises a captured signal after its graceful shutdown, so the process would die by
        # SIGTERM; a requested stop that completed cleanly is exit status 0.
        self._captured_signals.clear()
        if self.companion is not None:
            self.companion.should_exit = True


def _bound_port(server: uvicorn.Server) -> int:
    for listener in server.servers:
        for sock in listener.sockets:
            return int(sock.getsockname()[1])
    raise RuntimeError("server has no listening socket")


def open_listener(host: str, port: int, what: str) -> socket.socket:
    """Bind here, not in uvicorn, so an unusable address is a clear one-line exit 3 ("unavailable": the
    address is busy or not ours to take), not a traceback."""
    sock = None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE)[0]
        # proto must be IPPROTO_TCP: asyncio only sets TCP_NODELAY on accepted sockets whose proto says TCP,
        # and Nagle plus delayed ACKs would add ~40 ms to every answer.
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
        return sock
    except (OSError, UnicodeError) as error:
        if sock is not None:
            sock.close()
        reason = getattr(error, "strerror", None) or error.__class__.__name__
        raise _fail(f"cannot listen on {host}:{port} for the {what}: {reason}", EXIT_UNAVAILABLE) from None


def _fail(message: str, code: int = EXIT_INVALID_INPUT) -> typer.Exit:
    typer.echo(f"mock-receiver: {message}", err=True)
    return typer.Exit(code=code)


def _config(app_: FastAPI, host: str, port: int, *, log_level: str, protocol: type[asyncio.Protocol],
            loop: LoopImpl, bounds: ListenerBounds, tls: dict[str, Any] | None = None) -> uvicorn.Config:
    # No access log: it would print request lines, and nothing that reaches the log may carry a secret.
    options: dict[str, Any] = {"http": protocol, **(tls or {})}
    return uvicorn.Config(NoTracebacks(BodyDeadlines(app_, bounds)), host=host, port=port, log_level=log_level,
                          access_log=False, lifespan="off", server_header=False, loop=loop.value, **options)


async def _run(primary: _PrimaryServer, companion: _CompanionServer | None, host: str, state_dir: Path,
               sockets: list[socket.socket], *, tls: TlsMaterial | None = None) -> str | None:
    """Serve until stopped; the reason when the endpoints file could not be written (then both
    listeners are closed again and nothing was announced)."""
    failure = None
    companion_task = asyncio.create_task(companion.serve([sockets[1]])) if companion is not None else None
    primary_task = asyncio.create_task(primary.serve([sockets[0]]))
    while not primary.started or (companion is not None and not companion.started):
        if primary_task.done() or (companion_task is not None and companion_task.done()):
            primary.should_exit = True
            if companion is not None:
                companion.should_exit = True
            break
        await asyncio.sleep(0.02)
    else:
        authority = f"[{host}]" if ":" in host else host  # an IPv6 literal is bracketed in a URL (RFC 3986)
        data_url = f"{'https' if tls else 'http'}://{authority}:{_bound_port(primary)}"
        admin_url = f"http://{authority}:{_bound_port(companion)}" if companion is not None else data_url
        endpoints = {"event": "listening", "data_url": data_url, "admin_url": admin_url}
        if tls is not None:
            endpoints.update({"tls_dir": str(tls.directory.resolve()), "ca_file": str(tls.ca_file.resolve())})
        try:
            # Never through a planted link: a new file renamed over the name (checked at start as well).
            write_new_file(state_dir / ENDPOINTS_FILE, (json.dumps(endpoints) + "\n").encode("utf-8"))
        except (StateFileRefused, OSError) as error:
            failure = str(error) if isinstance(error, StateFileRefused) else \
                f"cannot write {state_dir / ENDPOINTS_FILE}: {error.strerror or error.__class__.__name__}"
            primary.should_exit = True
        else:
            print(json.dumps(endpoints), flush=True)  # the readiness line harnesses wait for
    await primary_task
    if companion is not None and companion_task is not None:
        companion.should_exit = True
        await companion_task
    return failure


def _check_state_dir(state_dir: Path) -> None:
    if state_dir.exists() and not state_dir.is_dir():
        raise _fail(f"--state-dir {state_dir} exists and is not a directory")
    try:
        check_files([state_dir / ENDPOINTS_FILE, *ledger_files(state_dir / LEDGER_FILE)])
    except StateFileRefused as error:
        raise _fail(f"--state-dir: {error}") from None


def _check_server_options(log_level: str, http: HttpImpl, loop: LoopImpl) -> None:
    if log_level not in ("critical", "error", "warning", "info", "debug", "trace"):
        raise _fail(f"unknown --log-level {log_level!r}")
    for option, choice, module in (("--http", http.value, "httptools"), ("--loop", loop.value, "uvloop")):
        if choice == module and importlib.util.find_spec(module) is None:
            raise _fail(f"{option} {choice} needs the {module} package, which is not installed")


@app.command()
def serve(
    *,
    behaviour: Annotated[Path, typer.Option("--behaviour", help="Behaviour YAML file.")],
    state_dir: Annotated[Path, typer.Option("--state-dir", help="Directory of the durable ledger.")],
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Data API port (0 picks a free port).", min=0, max=65535)] = 8080,
    admin_port: Annotated[int | None, typer.Option(
        help="Serve /_admin/ on its own port (0 picks one); the data port then answers 404 there.",
        min=0, max=65535)] = None,
    durability: Annotated[Durability, typer.Option(
        help="full: fsync every commit; normal: survive process kills, not power loss.")] = Durability.FULL,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "warning",
    http: Annotated[HttpImpl, typer.Option(
        help="HTTP parser; auto uses httptools when installed, else h11.")] = HttpImpl.AUTO,
    loop: Annotated[LoopImpl, typer.Option(
        help="Event loop; auto uses uvloop when installed, else asyncio.")] = LoopImpl.AUTO,
    tls_dir: Annotated[Path | None, typer.Option(
        "--tls-dir", help="Serve the data API over HTTPS; a fresh test CA, server and client certificates "
        "are written here at start.")] = None,
    client_key_passphrase_env: Annotated[str | None, typer.Option(
        "--client-key-passphrase-env", help="With --tls-dir: also write client-encrypted.key, the good client "
        "key encrypted with the passphrase in this environment variable.")] = None,
    header_timeout: Annotated[float, typer.Option(
        help="Seconds a request head may take (408 head_timeout, then the connection is closed).",
        min=0.1, max=3600)] = ListenerBounds.header_timeout,
    body_idle_timeout: Annotated[float, typer.Option(
        help="Seconds a request body may send nothing (408 body_timeout).", min=0.1, max=3600)
    ] = ListenerBounds.body_idle_timeout,
    body_timeout: Annotated[float, typer.Option(
        help="Seconds a request body may take in all (408 body_timeout).", min=0.1, max=86_400)
    ] = ListenerBounds.body_timeout,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="Another name the admin API answers to in the Host header (besides 127.0.0.1, "
        "[::1], localhost and --host); repeatable.")] = None,
) -> None:
    """Serve the data API (and the admin API) until interrupted."""
    try:
        loaded = load_behaviour_file(behaviour)
    except BehaviourError as error:
        raise _fail(str(error)) from None
    _check_state_dir(state_dir)
    admin_names = [host_name(name) for name in allow_host or ()]
    if any(name in WILDCARD_NAMES or not is_host_name(name) for name in admin_names):
        raise _fail("--allow-host takes a host name or an IP address (not a wildcard address)")
    _check_server_options(log_level, http, loop)
    if not all(math.isfinite(value) for value in (header_timeout, body_idle_timeout, body_timeout)):
        raise _fail("--header-timeout, --body-idle-timeout and --body-timeout take a number of seconds")
    try:
        tls = tls_material_for(tls_dir, loaded.auth, host, client_key_passphrase_env)
    except TlsSetupError as error:
        raise _fail(str(error)) from None
    sockets = [open_listener(host, port, "data API")]
    if admin_port is not None:
        sockets.append(open_listener(host, admin_port, "admin API"))
    try:
        receiver = open_receiver(loaded, state_dir, durability=durability.value, tls_listener=tls is not None)
    except (LedgerRefused, StateFileRefused, AuthConfigError) as error:
        for sock in sockets:
            sock.close()
        raise _fail(f"{'' if isinstance(error, AuthConfigError) else '--state-dir: '}{error}") from None
    except (OSError, sqlite3.Error) as error:
        for sock in sockets:
            sock.close()
        raise _fail(f"cannot open the ledger under {state_dir}: {error.__class__.__name__}: {error}") from None
    companion = None
    names = [host, *admin_names]
    bounds = ListenerBounds(header_timeout=header_timeout, body_idle_timeout=body_idle_timeout,
                            body_timeout=body_timeout)
    protocol = bounded_protocol(uvicorn_protocol(http.value), bounds)
    if admin_port is not None:
        companion = _CompanionServer(_config(create_admin_app(receiver, admin_host_names=names), host, admin_port,
                                             log_level=log_level, protocol=protocol, loop=loop, bounds=bounds))
    tls_options = None if tls is None else uvicorn_tls_options(
        server_context(tls, require_client_cert=isinstance(loaded.auth, MutualTlsAuth)), protocol)
    primary = _PrimaryServer(_config(create_data_app(receiver, include_admin=companion is None,
                                                     admin_host_names=names), host, port, log_level=log_level,
                                     protocol=protocol, loop=loop, bounds=bounds, tls=tls_options))
    primary.companion = companion
    log_redaction.install()  # after uvicorn configured its loggers: trace logs carry no query value
    try:
        # The loop factory of the primary config honours --loop (uvloop or asyncio).
        with asyncio.Runner(loop_factory=primary.config.get_loop_factory()) as runner:
            failure = runner.run(_run(primary, companion, host, state_dir, sockets, tls=tls))
    finally:
        receiver.ledger.close()
    if failure is not None:
        raise _fail(f"--state-dir: {failure}")


@app.command()
def validate(behaviour: Annotated[Path, typer.Argument(help="Behaviour YAML file.")]) -> None:
    """Validate a behaviour file; exit 2 with the reasons when it is invalid."""
    try:
        loaded = load_behaviour_file(behaviour)
    except BehaviourError as error:
        raise _fail(str(error)) from None
    typer.echo(f"ok: behaviour {loaded.name} ({len(loaded.resources)} resources, {len(loaded.rules)} rules)")


def main() -> None:
    app()
