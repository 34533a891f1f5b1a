"""`fault-proxy tcp ...`: run the built-in Toxiproxy-compatible server."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from fault_proxy.cli_run import EXIT_UNAVAILABLE, fail
from fault_proxy.config import LOG_LEVELS
from fault_proxy.tcp.addresses import AddressError, split_host_port
from fault_proxy.tcp.server import READY_PREFIX, ServerStartError, serve

tcp_app = typer.Typer(
    name="tcp",
    help="Byte-level TCP faults behind a Toxiproxy-compatible HTTP API.",
    no_args_is_help=True,
    add_completion=False,
)


@tcp_app.callback()
def _group() -> None:
    """Byte-level TCP faults (latency, bandwidth, timeout, reset_peer, slicer, limit_data, slow_close)."""


def _parse_api(value: str) -> tuple[str, int]:
    try:
        return split_host_port(value)
    except AddressError as exc:
        raise typer.BadParameter(f"{exc}; expected HOST:PORT such as 127.0.0.1:8474") from None


@tcp_app.command("serve")
def serve_command(
    api: Annotated[str, typer.Option("--api", help="HOST:PORT of the HTTP API (port 0 picks a free one).")]
    = "127.0.0.1:8474",
    seed: Annotated[int | None, typer.Option("--seed", help="Seed toxicity, jitter and slicer draws "
                                             "so a run can be reproduced.")] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="critical, error, warning, info, debug or "
                                           "trace; query values and raw bytes are redacted.")] = "warning",
) -> None:
    """Serve the Toxiproxy HTTP API and its proxies until SIGINT/SIGTERM.

    Binds loopback by default; proxies created without a listen host also bind loopback.
    Exit status: 0 after SIGINT/SIGTERM, 2 invalid arguments, 3 the API address cannot be bound.
    """
    host, port = _parse_api(api)
    if log_level not in LOG_LEVELS:
        raise typer.BadParameter(f"must be one of {', '.join(LOG_LEVELS)}", param_hint="--log-level")

    def announce(url: str) -> None:
        # The launcher reads this exact line to learn the port when --api asks for port 0.
        typer.echo(f"{READY_PREFIX}{url}")

    try:
        asyncio.run(serve(host, port, seed=seed, on_ready=announce, handle_signals=True, log_level=log_level))
    except (ServerStartError, OSError) as exc:
        raise fail("fault-proxy tcp", str(exc), EXIT_UNAVAILABLE) from None
