"""The real `mock-receiver serve` process: ports, restart durability, concurrent same-key submits."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
from mr_support import MOCK_RECEIVER_BIN, RECEIVERS, ServerProcess, admin_items, job_files, rows_for

from mock_receiver.cli import open_listener

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

RANGE = {"range_start": "2026-08-01", "range_end": "2026-08-03"}
ROWS = rows_for(["2026-08-01", "2026-08-02"])


def _submit_job(data_url: str, key: str) -> httpx.Response:
    files, data = job_files(key, ROWS, RANGE["range_start"], RANGE["range_end"])
    return httpx.post(f"{data_url}/mock/v1/dataset-jobs", files=files, data=data, timeout=20)


def test_separate_admin_port_hides_admin_from_the_data_port(tmp_path: Path) -> None:
    with ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path) as server:
        assert server.admin_url != server.data_url
        assert httpx.get(f"{server.data_url}/_admin/health").status_code == 404
        assert httpx.post(f"{server.data_url}/_admin/reset").status_code == 404
        assert httpx.get(f"{server.admin_url}/_admin/health").json()["behaviour"] == "dataset-jobs"
        # The admin port serves no data API.
        assert httpx.post(f"{server.admin_url}/mock/v1/dataset-jobs").status_code == 404
        assert _submit_job(server.data_url, "port-key").status_code == 202
        with httpx.Client(base_url=server.admin_url) as admin:
            assert len(admin_items(admin, "requests", mutation_key="port-key")) == 1
        endpoints = json.loads((tmp_path / "endpoints.json").read_text())
        assert endpoints["admin_url"] == server.admin_url


def test_openapi_is_served_on_the_data_port(tmp_path: Path) -> None:
    with ServerProcess(RECEIVERS / "stripe-like.yaml", tmp_path, admin_port=False) as server:
        paths = httpx.get(f"{server.data_url}/openapi.json").json()["paths"]
        assert "/mock/v1/resources/{resource}/batches" in paths
        assert "/_admin/effects" in paths  # shared port: the admin API is there too


def test_ground_truth_survives_a_kill_and_restart(tmp_path: Path) -> None:
    server = ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path).start()
    try:
        job_id = _submit_job(server.data_url, "restart-key").json()["job_id"]
        for _ in range(2):
            httpx.get(f"{server.data_url}/mock/v1/dataset-jobs/{job_id}")
        sync = httpx.post(f"{server.data_url}/mock/v1/resources/measurements/batches", params=RANGE,
                          json=ROWS, headers={"Idempotency-Key": "sync-key"})
        assert sync.status_code == 200
        server.kill()  # SIGKILL right after the answers: commits happened before them
        server.start()
        with httpx.Client(base_url=server.admin_url) as admin:
            effects = admin_items(admin, "effects")
            assert [(e["mutation_key"], e["job_id"]) for e in effects] == [("restart-key", job_id),
                                                                           ("sync-key", None)]
            assert len(admin_items(admin, "requests")) == 4
        # Fences survive too: the same key after restart is still a duplicate / a replay.
        duplicate = _submit_job(server.data_url, "restart-key")
        assert duplicate.status_code == 409 and duplicate.json()["job_id"] == job_id
        replay = httpx.post(f"{server.data_url}/mock/v1/resources/measurements/batches", params=RANGE,
                            json=ROWS, headers={"Idempotency-Key": "sync-key"})
        assert replay.json() == sync.json()
        with httpx.Client(base_url=server.admin_url) as admin:
            assert len(admin_items(admin, "effects")) == 2
    finally:
        server.stop()


def _race(urls: list[str], key: str, count: int) -> list[int]:
    statuses: list[int] = []
    barrier = threading.Barrier(count)
    lock = threading.Lock()

    def submit(index: int) -> None:
        barrier.wait(timeout=10)
        status = _submit_job(urls[index % len(urls)], key).status_code
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=submit, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return sorted(statuses)


def test_simultaneous_same_key_submits_make_exactly_one_job(tmp_path: Path) -> None:
    with ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path) as server:
        statuses = _race([server.data_url], "race-key", 8)
        assert statuses == [202] + [409] * 7
        with httpx.Client(base_url=server.admin_url) as admin:
            assert len(admin_items(admin, "jobs", mutation_key="race-key")) == 1
            assert len(admin_items(admin, "requests", mutation_key="race-key")) == 8


def test_two_processes_sharing_a_state_dir_still_make_one_job(tmp_path: Path) -> None:
    """BEGIN IMMEDIATE serialises the fence decision across processes, not only within one."""
    first = ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path).start()
    second = ServerProcess(RECEIVERS / "dataset-jobs.yaml", tmp_path).start()
    try:
        statuses = _race([first.data_url, second.data_url], "shared-key", 10)
        assert statuses == [202] + [409] * 9
        with httpx.Client(base_url=first.admin_url) as admin:
            assert len(admin_items(admin, "jobs", mutation_key="shared-key")) == 1
    finally:
        first.stop()
        second.stop()


@pytest.mark.parametrize(("args", "fragment"), [
    (["--behaviour", "missing.yaml"], "cannot read behaviour file"),
    (["--behaviour", "{bad}"], "not valid YAML"),
    (["--behaviour", "{invalid}"], "invalid behaviour"),
    (["--behaviour", "{good}", "--port", "70000"], "65535"),
    (["--behaviour", "{good}", "--durability", "sometimes"], "sometimes"),
])
def test_bad_cli_input_exits_2_with_a_clear_message(tmp_path: Path, args: list[str], fragment: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text("name: x\nresources: {}\nsurprise: 1\n")
    replacements = {"{bad}": str(bad), "{invalid}": str(invalid), "{good}": str(RECEIVERS / "bare-409.yaml")}
    argv = [replacements.get(arg, arg) for arg in args]
    result = subprocess.run([str(MOCK_RECEIVER_BIN), "serve", *argv, "--state-dir", str(tmp_path / "s")],
                            check=False, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_busy_port_exits_3_and_file_state_dir_exits_2(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = subprocess.run([str(MOCK_RECEIVER_BIN), "serve", "--port", str(port), "--behaviour",
                                 str(RECEIVERS / "bare-409.yaml"), "--state-dir", str(tmp_path / "s")],
                                check=False, capture_output=True, text=True, timeout=30)
    assert result.returncode == 3  # "unavailable", as in the other CLIs
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "Traceback" not in result.stderr
    state_file = tmp_path / "a-file"
    state_file.write_text("x")
    result = subprocess.run([str(MOCK_RECEIVER_BIN), "serve", "--port", "0", "--behaviour",
                             str(RECEIVERS / "bare-409.yaml"), "--state-dir", str(state_file)],
                            check=False, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "not a directory" in result.stderr


def test_listener_sockets_are_tcp_so_accepted_connections_get_nodelay() -> None:
    """asyncio sets TCP_NODELAY only when the socket's proto is TCP; without it answers wait ~40 ms."""
    listener = open_listener("127.0.0.1", 0, "data API")
    try:
        assert listener.proto == socket.IPPROTO_TCP
        with socket.create_connection(listener.getsockname()[:2]):
            accepted, _ = listener.accept()
            with accepted:
                assert accepted.proto == socket.IPPROTO_TCP
    finally:
        listener.close()


def test_validate_command(tmp_path: Path) -> None:
    ok = subprocess.run([str(MOCK_RECEIVER_BIN), "validate", str(RECEIVERS / "stripe-like.yaml")],
                        check=False, capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0 and "stripe-like" in ok.stdout
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text("name: x\nresources:\n  m: {mutation: upsert, date_field: d}\n")
    bad = subprocess.run([str(MOCK_RECEIVER_BIN), "validate", str(invalid)], check=False,
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2
    assert "resources.m.mutation" in bad.stderr


@pytest.mark.parametrize("admin_port", [True, False])
def test_sigterm_stops_both_listeners_and_exits_0(tmp_path: Path, admin_port: bool) -> None:
    server = ServerProcess(RECEIVERS / "stripe-like.yaml", tmp_path, admin_port=admin_port).start()
    assert httpx.get(f"{server.admin_url}/_admin/health").status_code == 200
    process = server.process
    assert process is not None
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=20)
    server.process = None
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
