"""Helpers for the mock receiver's authentication and TLS tests."""

from __future__ import annotations

import json
import os
import select
import signal
import ssl
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml
from mr_support import MOCK_RECEIVER_BIN, RECEIVERS

SUMMARY = "/mock/v1/resources/measurements/summary"
BATCHES = "/mock/v1/resources/measurements/batches?range_start=2026-03-01&range_end=2026-03-02"
ROWS = [{"business_date": "2026-03-01", "site": "s1", "value": "v1"}]


def behaviour_file(tmp_path: Path, auth: Mapping[str, Any] | None, base: str = "dataset-jobs") -> Path:
    """A bundled behaviour with an ``auth:`` section, written to a file."""
    document = yaml.safe_load((RECEIVERS / f"{base}.yaml").read_text(encoding="utf-8"))
    if auth is not None:
        document["auth"] = dict(auth)
    path = tmp_path / f"{base}-auth.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def client_context(tls_dir: Path, pair: str | None = None) -> ssl.SSLContext:
    """A client context trusting the receiver's generated CA, presenting one of its client pairs."""
    context = ssl.create_default_context(cafile=str(tls_dir / "ca.pem"))
    if pair is not None:
        context.load_cert_chain(str(tls_dir / f"{pair}.pem"), str(tls_dir / f"{pair}.key"))
    return context


class AuthServer:
    """A real `mock-receiver serve` process (free ports), with extra environment and CLI options; keeps
    everything it wrote to stdout and stderr for the log checks."""

    def __init__(self, behaviour: Path, state_dir: Path, *, env: Mapping[str, str] | None = None,
                 extra: Sequence[str] = (), admin_port: bool = True) -> None:
        self.args = [str(MOCK_RECEIVER_BIN), "serve", "--host", "127.0.0.1", "--port", "0",
                     "--behaviour", str(behaviour), "--state-dir", str(state_dir), *extra]
        if admin_port:
            self.args += ["--admin-port", "0"]
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.process: subprocess.Popen[str] | None = None
        self.endpoints: dict[str, str] = {}
        self.stdout = ""
        self.stderr = ""

    @property
    def data_url(self) -> str:
        return self.endpoints["data_url"]

    @property
    def admin_url(self) -> str:
        return self.endpoints["admin_url"]

    @property
    def tls_dir(self) -> Path:
        return Path(self.endpoints["tls_dir"])

    def start(self, timeout: float = 30.0) -> AuthServer:
        self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=self.env)
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.2)
            if ready:
                line = self.process.stdout.readline()
                if not line:
                    break
                self.stdout += line
                self.endpoints = json.loads(line)
                return self
            if self.process.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"mock-receiver did not become ready: {self.stderr[-2000:]}")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            out, err = self.process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, err = self.process.communicate(timeout=5)
        self.stdout += out or ""
        self.stderr += err or ""
        self.process = None

    def admin(self) -> httpx.Client:
        return httpx.Client(base_url=self.admin_url, headers={"X-Restproof-Admin": "1"}, timeout=10)

    def __enter__(self) -> AuthServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
