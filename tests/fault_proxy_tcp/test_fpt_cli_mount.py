"""The TCP group is reachable as `fault-proxy tcp ...` from the main command."""

from __future__ import annotations

from typer.testing import CliRunner

from fault_proxy.cli import app


def test_tcp_group_is_mounted_and_rejects_bad_api_address() -> None:
    result = CliRunner().invoke(app, ["tcp", "serve", "--api", "not-an-address"])
    assert result.exit_code == 2
    assert "HOST:PORT" in result.output


def test_tcp_group_help_lists_serve() -> None:
    result = CliRunner().invoke(app, ["tcp", "--help"])
    assert result.exit_code == 0
    assert "serve" in result.output
