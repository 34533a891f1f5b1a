"""Helpers for the mock receiver tests: in-process clients, real server processes, payload builders."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import select
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

with warnings.catch_warnings():
    # Starlette's TestClient announces a future move to another httpx package; it still works as is.
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

from mock_receiver.app import create_data_app, open_receiver
from mock_receiver.behaviour import Behaviour, load_behaviour_file, parse_behaviour

REPO = Path(__file__).resolve().parents[2]
RECEIVERS = REPO / "scenarios" / "receivers"
MOCK_RECEIVER_BIN = Path(sys.executable).with_name("mock-receiver")
ADMIN_HEADERS = {"X-Restproof-Admin": "1"}
"""Every state-changing admin request carries this header (docs/mock-receiver.md, "Admin API")."""
TEST_HOST = ("testserver",)
"""The Host Starlette's TestClient sends: the in-process admin API is told it is its own name."""


def bundled(name: str) -> Behaviour:
    return load_behaviour_file(RECEIVERS / f"{name}.yaml")


def behaviour_with(name: str, **changes: Any) -> Behaviour:
    """A bundled behaviour with top-level keys replaced (validated again)."""
    document = bundled(name).model_dump(mode="json")
    document.update(changes)
    return parse_behaviour(document)


@contextmanager
def client_for(behaviour: Behaviour, state_dir: Path) -> Iterator[TestClient]:
    receiver = open_receiver(behaviour, state_dir)
    try:
        # The admin header on every request, as every admin client sends it; the cross-site tests use a
        # client without it.
        with TestClient(create_data_app(receiver, include_admin=True, admin_host_names=TEST_HOST),
                        raise_server_exceptions=True,
                        headers=ADMIN_HEADERS) as client:
            yield client
    finally:
        receiver.ledger.close()


def rows_for(dates: Sequence[str], *, tag: str = "v", date_field: str = "business_date") -> list[dict[str, Any]]:
    return [{date_field: day, "site": f"s{index}", "value": f"{tag}{index}"} for index, day in enumerate(dates)]


def csv_bytes(rows: Sequence[Mapping[str, Any]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


def csv_gz(rows: Sequence[Mapping[str, Any]]) -> bytes:
    return gzip.compress(csv_bytes(rows), mtime=0)


def job_files(key: str, rows: Sequence[Mapping[str, Any]], start: str, end: str
              ) -> tuple[dict[str, tuple[str, bytes, str]], dict[str, str]]:
    return ({"file": (f"{key}.csv.gz", csv_gz(rows), "application/gzip")},
            {"range_start": start, "range_end": end})


def admin_items(client: httpx.Client | TestClient, what: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"/_admin/{what}", params=params)
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


class ServerProcess:
    """A real `mock-receiver serve` process on free ports (the CLI prints its URLs when ready)."""

    def __init__(self, behaviour_file: Path, state_dir: Path, *, admin_port: bool = True,
                 extra: Sequence[str] = ()) -> None:
        self.args = [str(MOCK_RECEIVER_BIN), "serve", "--host", "127.0.0.1", "--port", "0",
                     "--behaviour", str(behaviour_file), "--state-dir", str(state_dir), *extra]
        if admin_port:
            self.args += ["--admin-port", "0"]
        self.process: subprocess.Popen[str] | None = None
        self.data_url = ""
        self.admin_url = ""

    def start(self, timeout: float = 60.0) -> ServerProcess:
        self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.2)
            if ready:
                line = self.process.stdout.readline()
                if not line:
                    break
                endpoints = json.loads(line)
                self.data_url, self.admin_url = endpoints["data_url"], endpoints["admin_url"]
                return self
            if self.process.poll() is not None:
                break
        stderr = self.stop()
        raise RuntimeError(f"mock-receiver did not become ready: {stderr[-2000:]}")

    def stop(self) -> str:
        if self.process is None:
            return ""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            _, stderr = self.process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, stderr = self.process.communicate(timeout=5)
        self.process = None
        return stderr or ""

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown, as a crash would be."""
        assert self.process is not None
        self.process.kill()
        self.process.communicate(timeout=10)
        self.process = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
