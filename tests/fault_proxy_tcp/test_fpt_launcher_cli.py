"""The launcher (real binary lookup, built-in fallback, thread mode) and the `serve` CLI."""

from __future__ import annotations

import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from fault_proxy.tcp.cli import tcp_app
from fault_proxy.tcp.launcher import (
    ENV_SERVER,
    LaunchError,
    ToxiproxyNotFound,
    find_real_toxiproxy,
    start_toxiproxy,
)

pytestmark = pytest.mark.timeout(60)


def _fake_binary(directory: Path, body: str) -> Path:
    path = directory / "toxiproxy-server"
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_env_var_naming_a_missing_binary_is_an_error(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_SERVER, str(tmp_path / "absent"))
    with pytest.raises(ToxiproxyNotFound, match=ENV_SERVER):
        find_real_toxiproxy()
    with pytest.raises(ToxiproxyNotFound):
        start_toxiproxy("auto")


def test_real_is_required_when_asked_for(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ENV_SERVER, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_real_toxiproxy() is None
    with pytest.raises(ToxiproxyNotFound, match="no Toxiproxy server binary on PATH"):
        start_toxiproxy("real")


def test_auto_falls_back_to_the_builtin_server_on_a_thread(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    monkeypatch.delenv(ENV_SERVER, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    handle = start_toxiproxy("auto", in_thread=True)
    try:
        assert handle.kind == "builtin"
        assert httpx.get(f"{handle.api_url}/version", timeout=5).status_code == 200
    finally:
        handle.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{handle.api_url}/version", timeout=2)


def test_a_found_binary_is_started_with_host_port_and_seed(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    # A stand-in for the Go binary that records its arguments and serves the same API, so the
    # launcher's command line and readiness wait are checked without the real server.
    args_file = tmp_path / "args"
    fake = _fake_binary(tmp_path, f"""\
        echo "$@" > {args_file}
        exec {sys.executable} -m fault_proxy.tcp serve --api "$2:$4" --seed "$6"
    """)
    monkeypatch.setenv(ENV_SERVER, str(fake))
    with start_toxiproxy("auto", seed=5) as handle:
        assert handle.kind == "real"
        assert httpx.get(f"{handle.api_url}/version", timeout=5).status_code == 200
        assert args_file.read_text().split() == ["-host", "127.0.0.1", "-port", str(handle.port),
                                                 "-seed", "5"]


def test_a_binary_that_exits_early_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_SERVER, str(_fake_binary(tmp_path, "exit 3\n")))
    with pytest.raises(LaunchError, match="status 3"):
        start_toxiproxy("auto", timeout=5)


def test_builtin_subprocess_serves_and_stops() -> None:
    handle = start_toxiproxy("builtin")
    assert handle.kind == "builtin"
    assert handle.host == "127.0.0.1"
    assert httpx.get(f"{handle.api_url}/proxies", timeout=5).json() == {}
    handle.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{handle.api_url}/proxies", timeout=2)


def test_cli_rejects_a_bad_api_address_with_exit_2() -> None:
    result = CliRunner().invoke(tcp_app, ["serve", "--api", "nonsense"])
    assert result.exit_code == 2
    assert "HOST:PORT" in result.output
    assert "Traceback" not in result.output


def test_cli_reports_a_taken_port_without_a_traceback() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "fault_proxy.tcp", "serve", "--api", f"127.0.0.1:{port}"],
            check=False, capture_output=True, text=True, timeout=30,
        )
    assert result.returncode == 3
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_module_entry_point_lists_serve() -> None:
    result = subprocess.run([sys.executable, "-m", "fault_proxy.tcp", "--help"],
                            check=False, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert "serve" in result.stdout
