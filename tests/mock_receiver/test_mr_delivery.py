"""Records that match the wire: the effect is kept, and the answer's fate is recorded apart from it."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import httpx
import pytest
from mr_support import ServerProcess, admin_items, behaviour_with, bundled, client_for, rows_for

pytestmark = [pytest.mark.timeout(120)]

PATH = "/mock/v1/resources/measurements/batches?range_start=2026-07-01&range_end=2026-07-02"
BODY = json.dumps(rows_for(["2026-07-01"])).encode()


def _slow_receiver(tmp_path: Path, seconds: float) -> Path:
    """stripe-like, with every submit answered `seconds` after its effect is committed."""
    rules = [{"name": "late-answer", "match": {"endpoints": ["sync_submit"]}, "when": {"always": True},
              "action": {"kind": "delay", "seconds": seconds, "after_effect": True}}]
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(behaviour_with("stripe-like", rules=rules).model_dump(mode="json")))
    return path


def _request(key: str) -> bytes:
    head = (f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Idempotency-Key: {key}\r\nContent-Length: {len(BODY)}\r\n\r\n")
    return head.encode() + BODY


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def _row(admin_url: str, key: str) -> dict[str, object]:
    with httpx.Client(base_url=admin_url, timeout=10) as admin:
        rows = admin_items(admin, "requests", idempotency_key=key)
    assert len(rows) == 1
    return rows[0]


def _settled_row(admin_url: str, key: str, deadline_s: float = 10) -> dict[str, object]:
    deadline = time.monotonic() + deadline_s
    row = _row(admin_url, key)
    while row["response_delivered"] == "unknown" and time.monotonic() < deadline:
        time.sleep(0.1)
        row = _row(admin_url, key)
    return row


def test_an_answer_written_to_an_open_connection_is_delivered_true(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        response = client.post(PATH, content=BODY, headers={"content-type": "application/json",
                                                            "Idempotency-Key": "k-true"})
        assert response.status_code == 200
        rejected = client.post(PATH, content=b"[", headers={"content-type": "application/json",
                                                           "Idempotency-Key": "k-rejected"})
        assert rejected.status_code == 400
        rows = {row["idempotency_key"]: row for row in admin_items(client, "requests")}
        assert rows["k-true"]["response_delivered"] == "true"
        assert rows["k-rejected"]["response_delivered"] == "true"
        assert client.get("/_admin/stats").json()["requests_by_delivery"] == {"true": 2}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["half_close", "reset"])
def test_a_client_gone_before_the_answer_keeps_the_effect_and_records_false(tmp_path: Path, how: str) -> None:
    with ServerProcess(_slow_receiver(tmp_path, 1.0), tmp_path / "state") as server:
        key = f"gone-{how}"
        with socket.create_connection(_address(server.data_url), timeout=10) as sock:
            sock.sendall(_request(key))
            time.sleep(0.3)  # the request is read and committed; the answer waits for the delay
            if how == "half_close":
                sock.shutdown(socket.SHUT_WR)
                received = sock.recv(65536)  # the server closes without a byte
                assert received == b""
            else:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        time.sleep(1.2)
        row = _settled_row(server.admin_url, key)
        assert (row["status"], row["outcome"], row["response_delivered"]) == (200, "applied", "false")
        with httpx.Client(base_url=server.admin_url, timeout=10) as admin:
            assert len(admin_items(admin, "effects", idempotency_key=key)) == 1  # the effect stands


@pytest.mark.slow
def test_a_kill_between_commit_and_answer_leaves_unknown(tmp_path: Path) -> None:
    server = ServerProcess(_slow_receiver(tmp_path, 5.0), tmp_path / "state").start()
    try:
        with socket.create_connection(_address(server.data_url), timeout=10) as sock:
            sock.sendall(_request("killed"))
            time.sleep(0.5)
            server.kill()
            assert sock.recv(65536) == b""
        server.start()
        row = _row(server.admin_url, "killed")
        assert (row["outcome"], row["response_delivered"]) == ("applied", "unknown")
    finally:
        server.stop()
