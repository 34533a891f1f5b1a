"""``--also-listen``: one proxy (one rule set, one log) on a second address; a client reaching it
there is logged with its own source address. Config refuses a shared host and, without
``--allow-non-loopback``, a non-loopback extra address."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from fault_proxy.config import ConfigError, ServeConfig, build_config
from tests.fault_proxy.fp_harness import start_upstream


def test_an_extra_address_must_have_its_own_host_and_be_loopback_unless_allowed() -> None:
    def config(*also: str, allow: bool = False) -> ServeConfig:
        return build_config(listen="127.0.0.1:0", upstream="http://127.0.0.1:9", control="127.0.0.1:0", seed=0,
                            also_listen=also, allow_non_loopback=allow)

    assert config("127.0.0.2:0").also_listen[0].host == "127.0.0.2"
    with pytest.raises(ConfigError, match="a host of its own"):
        config("127.0.0.1:0")
    with pytest.raises(ConfigError, match=r"--also-listen: 10\.9\.9\.9 is not a loopback"):
        config("10.9.9.9:0")
    assert config("10.9.9.9:0", allow=True).also_listen


def test_one_log_records_each_client_from_the_address_it_came_from(tmp_path: Path) -> None:
    upstream = start_upstream()
    ready = tmp_path / "ready.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "fault_proxy", "serve", "--listen", "127.0.0.1:0", "--upstream", upstream.url,
         "--control", "127.0.0.1:0", "--also-listen", "127.0.0.2:0", "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        info = json.loads(ready.read_text())
        (also,) = info["also"]
        assert also.startswith("127.0.0.2:") and info["proxy"].startswith("127.0.0.1:")
        httpx.get(f"http://{info['proxy']}/a", headers={"x-test-id": "a"}, timeout=10)
        # A client bound to 127.0.0.3 reaching the extra address: the log keeps its own address.
        host, port = also.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10, source_address=("127.0.0.3", 0)) as sock:
            sock.sendall(b"GET /b HTTP/1.1\r\nHost: x\r\nx-test-id: b\r\nConnection: close\r\n\r\n")
            while sock.recv(65536):
                pass
        log = httpx.get(f"http://{info['control']}/log", timeout=10).json()["entries"]
        clients = {entry["path"]: entry["client"].rsplit(":", 1)[0] for entry in log}
        assert clients == {"/a": "127.0.0.1", "/b": "127.0.0.3"}
    finally:
        process.terminate()
        process.wait(timeout=20)
        upstream.server.shutdown()
        upstream.server.server_close()
