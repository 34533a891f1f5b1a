"""Worker kills: the proxy SIGKILLs a process whose request is in flight, at a chosen phase."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from fp_harness import TEST_ID, RunningProxy, entry_for, fresh, new_test_id, proxy, traced_request

__all__ = ["fresh", "proxy"]

pytestmark = pytest.mark.timeout(60)

# A stand-in for a sink worker: waits for "go", sends one request through the proxy, reports.
WORKER = """
import sys, httpx
url, test_id, body_size, id_header, chunked = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
body = b"w" * body_size
content = iter([body[: body_size // 2], body[body_size // 2 :]]) if chunked == "1" else body
sys.stdin.readline()
try:
    r = httpx.post(url, content=content, headers={id_header: test_id}, timeout=10)
    print("status", r.status_code, flush=True)
except httpx.HTTPError as exc:
    print("error", type(exc).__name__, flush=True)
"""


def _run_worker(
    p: RunningProxy, phase: str, body_size: int = 300, chunked: bool = False
) -> tuple[int, str, str]:
    tid = new_test_id()
    path = f"/kill/{tid}"
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, p.proxy_url + path, tid, str(body_size), TEST_ID, "1" if chunked else "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        p.control.add_rule(
            {"match": {"path": path}, "fire": "once", "fault": {"action": "kill", "phase": phase, "pid": worker.pid}}
        )
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
        out, _ = worker.communicate(timeout=20)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    return worker.returncode, out, tid


@pytest.mark.parametrize("phase", ["request_headers", "request"])
def test_kill_before_forwarding_request_never_reaches_receiver(fresh: RunningProxy, phase: str) -> None:
    returncode, out, tid = _run_worker(fresh, phase)
    assert returncode == -signal.SIGKILL and out == ""
    entry = entry_for(fresh, lambda e: e["path"] == f"/kill/{tid}")
    assert entry["faults"][0]["detail"]["result"] == "killed"
    assert entry["forwarded"] == "no"
    assert fresh.upstream.wait_saw(tid, timeout=1.0) == []


@pytest.mark.parametrize("chunked", [False, True])
def test_kill_after_forwarding_request_reaches_receiver(fresh: RunningProxy, chunked: bool) -> None:
    returncode, out, tid = _run_worker(fresh, "forwarded", body_size=200_000, chunked=chunked)
    assert returncode == -signal.SIGKILL and out == ""
    seen = fresh.upstream.wait_saw(tid)
    assert len(seen) == 1 and seen[0].body_bytes == 200_000  # the complete request arrived
    assert ("transfer-encoding" in seen[0].header_names) is chunked
    entry = entry_for(fresh, lambda e: e["path"] == f"/kill/{tid}")
    assert entry["forwarded"] == "yes" and entry["request_body_bytes"] == 200_000
    assert entry["faults"][0]["phase"] == "forwarded"


def test_kill_after_receiver_answered(fresh: RunningProxy) -> None:
    returncode, out, tid = _run_worker(fresh, "response")
    assert returncode == -signal.SIGKILL and out == ""
    assert len(fresh.upstream.saw(tid)) == 1
    entry = entry_for(fresh, lambda e: e["path"] == f"/kill/{tid}")
    assert entry["upstream_status"] == 200 and entry["response_body_bytes_sent"] == 0


def test_kill_of_a_vanished_process_is_reported_and_request_cut(fresh: RunningProxy) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    fresh.control.add_rule({"fault": {"action": "kill", "phase": "request", "pid": gone.pid}})
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "POST", f"/kill/{tid}", tid, content=b"{}")
    assert out.error is not None and fresh.upstream.saw(tid) == []
    entry = entry_for(fresh, lambda e: e["path"] == f"/kill/{tid}")
    assert entry["faults"][0]["detail"]["result"] == "no_such_process"


def test_kill_refuses_the_proxy_itself(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "kill", "phase": "response", "pid": fresh.process.pid}})
    tid = new_test_id()
    traced_request(fresh.proxy_url, "POST", f"/kill/{tid}", tid, content=b"{}")
    entry = entry_for(fresh, lambda e: e["path"] == f"/kill/{tid}")
    assert entry["faults"][0]["detail"]["result"] == "refused_own_process"
    assert fresh.process.poll() is None


def test_kill_at_forwarded_for_a_bodyless_request_acts_when_the_answer_arrives(fresh: RunningProxy) -> None:
    fresh.control.add_rule(
        {"match": {"method": "GET"}, "fault": {"action": "kill", "phase": "forwarded", "pid": 4_000_000}}
    )
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "GET", f"/kill/{tid}", tid)
    # No body to stream: the earliest point after forwarding is the receiver's answer; the
    # request continues (a kill at "forwarded" never cuts the request itself).
    assert out.response is not None and out.response.status_code == 200
    assert len(fresh.upstream.saw(tid)) == 1
    entry = entry_for(fresh, lambda e: e["path"] == f"/kill/{tid}")
    assert entry["faults"][0]["phase"] == "response_headers"
    assert entry["faults"][0]["detail"]["result"] == "no_such_process"
