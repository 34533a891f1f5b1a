"""``fault-proxy`` command line (typer). ``app`` stays importable as ``fault_proxy.cli.app`` so
other subcommand groups can be added to it."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from fault_proxy.cli_run import EXIT_INVALID, EXIT_UNAVAILABLE, fail, main_for
from fault_proxy.config import DEFAULT_BODY_TIMEOUT_S, DEFAULT_MAX_BODY_BYTES, ConfigError, build_config
from fault_proxy.tcp.cli import tcp_app

PROG = "fault-proxy"

app = typer.Typer(
    name="fault-proxy",
    help="Reverse proxy that cuts HTTP transport phases deterministically, with a control API.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Fault-injection reverse proxy."""


@app.command()
def serve(  # noqa: PLR0917 - typer maps each option to a parameter
    listen: Annotated[str, typer.Option(help="HOST:PORT the proxy listens on (port 0: pick a free port)")],
    upstream: Annotated[str, typer.Option(help="receiver base URL, e.g. http://127.0.0.1:8080")],
    control: Annotated[str, typer.Option(help="HOST:PORT of the control API (port 0: pick a free port)")],
    seed: Annotated[int, typer.Option(help="seed for probabilistic rules (same seed, same decisions)")] = 0,
    ready_file: Annotated[
        str | None, typer.Option(help="write the bound addresses as JSON here once listening")
    ] = None,
    allow_non_loopback: Annotated[
        bool, typer.Option(help="accept non-loopback listen/upstream/control addresses")
    ] = False,
    also_listen: Annotated[
        list[str] | None, typer.Option(help="another HOST:PORT the same proxy listens on (repeatable)")
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option(help="largest request (and receiver answer) body the proxy reads, in bytes")
    ] = DEFAULT_MAX_BODY_BYTES,
    body_timeout: Annotated[
        float, typer.Option(help="seconds a request body may take to arrive after its head")
    ] = DEFAULT_BODY_TIMEOUT_S,
    log_level: Annotated[
        str, typer.Option(help="critical, error, warning, info, debug or trace (query values are redacted)")
    ] = "warning",
) -> None:
    """Run the proxy in front of UPSTREAM until SIGINT/SIGTERM.

    Exit status: 0 after SIGINT/SIGTERM, 2 invalid arguments, 3 an address cannot be bound.
    """
    try:
        config = build_config(
            listen=listen,
            upstream=upstream,
            control=control,
            seed=seed,
            allow_non_loopback=allow_non_loopback,
            ready_file=ready_file,
            also_listen=tuple(also_listen or ()),
            max_body_bytes=max_body_bytes,
            body_timeout=body_timeout,
            log_level=log_level,
        )
    except ConfigError as exc:
        raise fail(PROG, str(exc), EXIT_INVALID) from None
    # mitmproxy is a heavy import: load it only when serving, so --help and errors stay fast.
    from fault_proxy import server as proxy_server  # noqa: PLC0415

    try:
        code = asyncio.run(proxy_server.serve(config))
    except proxy_server.StartupError as exc:
        raise fail(PROG, str(exc), EXIT_UNAVAILABLE) from None
    except proxy_server.ReadyFileError as exc:
        raise fail(PROG, str(exc), EXIT_INVALID) from None
    raise typer.Exit(code)


app.add_typer(tcp_app, name="tcp")


def main() -> None:
    main_for(app, PROG)
