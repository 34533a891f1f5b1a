"""Control API, rule matching through the proxy, holds, reproducibility and log hygiene."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fp_harness import TEST_ID, RunningProxy, Traced, entry_for, fresh, new_test_id, proxy, traced_request
from typer.testing import CliRunner

from fault_proxy.cli import app
from fault_proxy.control_client import ADMIN_HEADERS, ControlError

__all__ = ["fresh", "proxy"]

pytestmark = pytest.mark.timeout(60)


def _statuses(p: RunningProxy, n: int, method: str = "POST") -> list[int]:
    codes = []
    with httpx.Client(base_url=p.proxy_url, timeout=5) as client:
        for _ in range(n):
            codes.append(client.request(method, "/batches/n", content=b"{}").status_code)
    return codes


def test_nth_matching_request_through_the_proxy(fresh: RunningProxy) -> None:
    fresh.control.add_rule(
        {"match": {"method": "POST"}, "nth": 3, "fire": "once", "fault": {"action": "status", "status": 503}}
    )
    _statuses(fresh, 2, method="GET")  # non-matching traffic does not count
    assert _statuses(fresh, 5) == [200, 200, 503, 200, 200]
    (rule,) = fresh.control.rules()
    assert rule["matched"] == 5 and rule["fired"] == 1 and rule["armed"] is False


def test_header_presence_matching(fresh: RunningProxy) -> None:
    fresh.control.add_rule(
        {"match": {"headers_present": ["Idempotency-Key"]}, "fault": {"action": "status", "status": 409}}
    )
    with httpx.Client(base_url=fresh.proxy_url, timeout=5) as client:
        assert client.post("/a", content=b"{}").status_code == 200
        assert client.post("/a", content=b"{}", headers={"Idempotency-Key": "k"}).status_code == 409


def test_seeded_probability_gives_the_same_decisions_after_reset(fresh: RunningProxy) -> None:
    rule = {"id": "coin", "fire": "probability", "probability": 0.5, "fault": {"action": "status", "status": 500}}
    runs = []
    for seed in (21, 21, 22):
        fresh.control.reset(seed=seed)
        fresh.control.add_rule(rule)
        runs.append(_statuses(fresh, 24))
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
    assert {200, 500} == set(runs[0])


def _background(p: RunningProxy, tid: str, method: str = "POST") -> tuple[threading.Thread, list[Traced]]:
    box: list[Traced] = []
    thread = threading.Thread(
        target=lambda: box.append(traced_request(p.proxy_url, method, f"/held/{tid}", tid, content=b"{}"))
    )
    thread.start()
    return thread, box


def test_hold_then_release_forwards(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "hold", "phase": "request"}})
    tid = new_test_id()
    thread, box = _background(fresh, tid)
    (held,) = fresh.control.wait_for_held()
    assert held["path"] == f"/held/{tid}" and held["phase"] == "request"
    assert fresh.upstream.saw(tid) == []  # parked before forwarding
    fresh.control.release(held["hold_id"])
    thread.join(10)
    assert box[0].response is not None and box[0].response.status_code == 200
    assert len(fresh.upstream.saw(tid)) == 1
    entry = entry_for(fresh, lambda e: e["path"] == f"/held/{tid}")
    assert entry["faults"][0]["detail"]["decision"] == "release"
    assert fresh.control.held() == []


def test_hold_then_cut_never_forwards(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "hold", "phase": "request"}})
    tid = new_test_id()
    thread, box = _background(fresh, tid)
    (held,) = fresh.control.wait_for_held()
    fresh.control.cut(held["hold_id"])
    thread.join(10)
    assert isinstance(box[0].error, httpx.RemoteProtocolError)
    assert fresh.upstream.saw(tid) == []
    entry = entry_for(fresh, lambda e: e["path"] == f"/held/{tid}")
    assert entry["forwarded"] == "no" and entry["faults"][0]["detail"]["decision"] == "cut"


def test_hold_at_response_then_cut_after_receiver_committed(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "hold", "phase": "response"}})
    tid = new_test_id()
    thread, box = _background(fresh, tid)
    (held,) = fresh.control.wait_for_held()
    assert len(fresh.upstream.saw(tid)) == 1  # the receiver answered; the client has nothing yet
    fresh.control.cut(held["hold_id"])
    thread.join(10)
    assert isinstance(box[0].error, httpx.RemoteProtocolError) and not box[0].response_bytes_seen


def test_hold_timeout_applies_on_timeout(fresh: RunningProxy) -> None:
    fresh.control.add_rule(
        {"fault": {"action": "hold", "phase": "request", "timeout_seconds": 0.3, "on_timeout": "release"}}
    )
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "POST", f"/held/{tid}", tid, content=b"{}")
    assert out.response is not None and out.response.status_code == 200
    entry = entry_for(fresh, lambda e: e["path"] == f"/held/{tid}")
    assert entry["faults"][0]["detail"]["timed_out"] is True


def test_reset_cuts_held_requests(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "hold", "phase": "request"}})
    tid = new_test_id()
    thread, box = _background(fresh, tid)
    fresh.control.wait_for_held()
    assert fresh.control.reset()["holds_cut"] == 1
    thread.join(10)
    assert box[0].error is not None and fresh.upstream.saw(tid) == []


def test_log_holds_no_secret_values(fresh: RunningProxy) -> None:
    sentinel = "SENTINEL-7f3a9c"
    tid = new_test_id()
    out = traced_request(
        fresh.proxy_url,
        "POST",
        f"/secret/{tid}?token={sentinel}&page=2",
        tid,
        content=json.dumps({"password": sentinel}).encode(),
        headers={"Authorization": f"Bearer {sentinel}", "X-Api-Key": sentinel},
    )
    assert out.response is not None
    entry = entry_for(fresh, lambda e: e["path"] == f"/secret/{tid}")
    assert "authorization" in entry["request_header_names"] and "x-api-key" in entry["request_header_names"]
    assert entry["query_names"] == ["page", "token"]
    assert len(entry["request_body_sha256"]) == 64
    raw = httpx.get(f"{fresh.control_url}/log").text
    assert sentinel not in raw and "Bearer" not in raw


def test_log_since_and_reset(fresh: RunningProxy) -> None:
    _statuses(fresh, 3)
    entries = fresh.control.log()
    assert len(entries) == 3
    assert [e["seq"] for e in fresh.control.log(since=entries[0]["seq"])] == [e["seq"] for e in entries[1:]]
    fresh.control.clear_log()
    assert fresh.control.log() == []
    _statuses(fresh, 1)
    assert fresh.control.log()[0]["seq"] > entries[-1]["seq"]  # numbers are never reused


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "kind"),
    [
        ("POST", "/rules", {"fault": {"action": "nope"}}, 422, "invalid-input"),
        ("POST", "/rules", {"fault": {"action": "status", "status": 42}}, 422, "invalid-input"),
        ("POST", "/reset", {"seed": -1}, 422, "invalid-input"),
        ("DELETE", "/rules/missing", None, 404, "unknown-rule"),
        ("POST", "/held/h999/release", None, 404, "unknown-hold"),
        ("GET", "/log?since=-1", None, 400, "invalid-input"),
        ("GET", "/no-such-endpoint", None, 404, "http"),
    ],
)
def test_bad_input_gets_problem_json(
    fresh: RunningProxy, method: str, path: str, body: Any, status: int, kind: str
) -> None:
    response = httpx.request(method, f"{fresh.control_url}{path}", json=body, headers=ADMIN_HEADERS, timeout=5)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["type"] == f"urn:fault-proxy:problem:{kind}" and problem["status"] == status


def test_validation_problem_does_not_echo_input(fresh: RunningProxy) -> None:
    response = httpx.post(
        f"{fresh.control_url}/rules", json={"fault": {"action": "status", "status": "SENTINEL-x"}},
        headers=ADMIN_HEADERS, timeout=5,
    )
    assert response.status_code == 422 and "SENTINEL-x" not in response.text
    assert any("status" in e["loc"] for e in response.json()["errors"])


def test_duplicate_rule_id_is_a_conflict(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"id": "dup", "fault": {"action": "close", "phase": "request"}})
    with pytest.raises(ControlError) as info:
        fresh.control.add_rule({"id": "dup", "fault": {"action": "close", "phase": "request"}})
    assert info.value.status == 409
    fresh.control.delete_rule("dup")
    assert fresh.control.rules() == []


def test_health(fresh: RunningProxy) -> None:
    health = fresh.control.health()
    assert health["status"] == "ok" and health["upstream"] == fresh.upstream.url
    assert f"http://{health['listen']}" == fresh.proxy_url and health["seed"] == 7


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--listen", "10.1.2.3:0", "--upstream", "http://127.0.0.1:1", "--control", "127.0.0.1:0"], "loopback"),
        (["--listen", "127.0.0.1:0", "--upstream", "http://example.com:80", "--control", "127.0.0.1:0"], "loopback"),
        (["--listen", "127.0.0.1", "--upstream", "http://127.0.0.1:1", "--control", "127.0.0.1:0"], "HOST:PORT"),
        (["--listen", "127.0.0.1:70000", "--upstream", "http://127.0.0.1:1", "--control", "127.0.0.1:0"], "port"),
        (["--listen", "127.0.0.1:0", "--upstream", "ftp://127.0.0.1:1", "--control", "127.0.0.1:0"], "http://"),
        (["--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/api", "--control", "127.0.0.1:0"], "no path"),
        (["--listen", "127.0.0.1:5", "--upstream", "http://127.0.0.1:1", "--control", "127.0.0.1:5"], "differ"),
        (["--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--control", "127.0.0.1:9"], "control"),
        (["--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1", "--control", "127.0.0.1:0",
          "--seed", "-3"], "seed"),
    ],
)
def test_cli_bad_arguments_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["serve", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_address_in_use_exits_3_unavailable_with_a_clear_message(proxy: RunningProxy) -> None:
    taken = proxy.proxy_url.removeprefix("http://")
    result = subprocess.run(
        [sys.executable, "-m", "fault_proxy", "serve", "--listen", taken, "--upstream", proxy.upstream.url,
         "--control", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=30, check=False,
    )
    assert result.returncode == 3
    assert f"cannot listen on {taken}" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_hold_at_response_then_release_delivers_the_receivers_answer(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "hold", "phase": "response"}})
    tid = new_test_id()
    thread, box = _background(fresh, tid)
    (held,) = fresh.control.wait_for_held()
    assert held["phase"] == "response" and len(fresh.upstream.saw(tid)) == 1
    assert not box  # the client is still waiting for its answer
    fresh.control.release(held["hold_id"])
    thread.join(10)
    assert box[0].response is not None and box[0].response.status_code == 200 and box[0].body_bytes == 16
    entry = entry_for(fresh, lambda e: e["path"] == f"/held/{tid}")
    assert entry["phase"] == "delivered" and entry["timestamps"]["release_response"] >= held["held_at"]


def test_a_held_request_whose_client_died_still_reaches_the_receiver_when_released(fresh: RunningProxy) -> None:
    # The zombie request: the worker is gone, its parked bytes are delivered after all.
    fresh.control.add_rule({"fault": {"action": "hold", "phase": "request"}})
    tid = new_test_id()
    target = urlsplit(fresh.proxy_url)
    body = b'{"row": 1}'
    with socket.create_connection((target.hostname, target.port), timeout=5) as client:
        client.sendall(f"POST /held/{tid} HTTP/1.1\r\nHost: {target.netloc}\r\n{TEST_ID}: {tid}\r\n"
                       f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        (held,) = fresh.control.wait_for_held()
    assert fresh.upstream.saw(tid) == []  # parked, and now its client is gone
    fresh.control.release(held["hold_id"])
    (seen,) = fresh.upstream.wait_saw(tid)
    assert seen.method == "POST" and seen.body_bytes == len(body)
    entry = entry_for(fresh, lambda e: e["path"] == f"/held/{tid}" and e.get("upstream_status") is not None)
    assert entry["forwarded"] == "yes" and entry["upstream_status"] == 200
    assert "delivered the released request" in entry["error"]


def test_a_held_request_whose_client_died_just_before_the_release_still_reaches_the_receiver(
        fresh: RunningProxy) -> None:
    # The harness kills the worker and releases at once: the proxy may not have read the close yet.
    # The held bytes must reach the receiver whichever it notices first (hold_kill_release rows).
    address = urlsplit(fresh.proxy_url)
    for _ in range(12):
        fresh.control.add_rule({"fire": "once", "fault": {"action": "hold", "phase": "request"}})
        tid = new_test_id()
        body = b"{}"
        client = socket.create_connection((str(address.hostname), int(address.port or 80)), timeout=5)
        client.sendall(f"POST /held/{tid} HTTP/1.1\r\nHost: {address.netloc}\r\n{TEST_ID}: {tid}\r\n"
                       f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        (held,) = fresh.control.wait_for_held()
        client.close()  # the worker is gone ...
        fresh.control.release(held["hold_id"])  # ... and released before the proxy may have noticed
        deadline = time.monotonic() + 5
        while not fresh.upstream.saw(tid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(fresh.upstream.saw(tid)) == 1
