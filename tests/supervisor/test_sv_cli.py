"""`delivery run / inspect` as an operator uses them, against a real receiver through the fault
proxy: a worker killed mid-request, a second host that replays its attempt under the certified
fence, and a sentinel secret that never leaves the Authorization header."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sv_support import REPO, Services, start_services, stop

pytestmark = pytest.mark.timeout(300)
DELIVERY = str(Path(sys.executable).with_name("delivery"))
SENTINEL = "sentinel-token-5f0c1b7e9d"


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    running = start_services("json-batches", tmp_path_factory.mktemp("cli-services"))
    try:
        yield running
    finally:
        stop(running.proxy)
        stop(running.receiver)


def _bindings(tmp_path: Path, url: str) -> Path:
    document = yaml.safe_load((REPO / "scenarios" / "bindings" / "mock_measurements.yaml").read_text())
    document["authority"] = url
    directory = tmp_path / "bindings"
    directory.mkdir()
    (directory / "mock_measurements.yaml").write_text(yaml.safe_dump(document))
    return directory


def _delivery(*args: str, failpoint: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MOCK_RECEIVER_TOKEN": SENTINEL}
    env.pop("RESTPROOF_FAILPOINT", None)
    if failpoint:
        env["RESTPROOF_FAILPOINT"] = failpoint
    return subprocess.run([DELIVERY, *args], check=False, capture_output=True, text=True, env=env, timeout=240)


def test_killed_worker_recovers_on_another_host_and_the_operator_resolves_it(
    tmp_path: Path, services: Services
) -> None:
    services.reset()
    state = tmp_path / "state"
    common = [str(REPO / "scenarios/workloads/measurements-sync.yaml"), "--scope-from", "2026-03-01",
              "--scope-to", "2026-03-05",
              "--bindings-dir", str(_bindings(tmp_path, services.proxy_url)), "--state-dir", str(state),
              "--format", "json", "--lease-seconds", "1"]
    first = _delivery("run", *common, "--worker-id", "host-a", failpoint="http.submit.after_response_headers")
    assert first.returncode == -9, first.stderr  # SIGKILLed after the receiver answered
    time.sleep(1.2)  # host-a's mutation lease expires on the journal clock
    second = _delivery("run", *common, "--worker-id", "host-b")
    # The profile's fence certifiably deduplicates a same-key replay: host-b replays host-a's
    # attempt(s) within the key's retention and the receiver's duplicate answer resolves them.
    assert second.returncode == 0, second.stderr
    result = json.loads(second.stdout)
    assert [c["status"] for c in result["children"]] == ["completed"] * 2
    posts = [e for e in services.proxy_log() if e["method"] == "POST"]
    assert 3 <= len(posts) <= 4, "each child sent once, plus the same-key replay of what host-a had in flight"
    assert len({e["request_body_sha256"] for e in posts}) == 2, "a replay sends the same bytes as the original"
    assert sorted(e["scope_start"] for e in services.effects()) == ["2026-03-01", "2026-03-03"]
    inspected = _delivery("inspect", "--operation-id", result["parent_id"], "--state-dir", str(state),
                          "--format", "json")
    final = json.loads(inspected.stdout)
    assert final["exit_code"] == 0 and final["frontier"]["frontier_order"] == 1
    reconciled = inspected
    # The sentinel credential: in no output, no journal row, no marker, no artifact, no proxy record.
    outputs = [first.stdout, first.stderr, second.stdout, second.stderr, reconciled.stdout, reconciled.stderr]
    assert not any(SENTINEL in text for text in outputs)
    for path in state.rglob("*"):
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path
    assert SENTINEL not in json.dumps(services.proxy_log()) + json.dumps(services.requests())


def test_an_unknown_failpoint_is_refused_before_anything_happens(tmp_path: Path, services: Services) -> None:
    services.reset()
    run = _delivery("run", str(REPO / "scenarios/workloads/measurements-sync.yaml"), "--scope-from", "2026-03-01",
                    "--scope-to", "2026-03-05", "--bindings-dir", str(_bindings(tmp_path, services.proxy_url)),
                    "--state-dir", str(tmp_path / "s"), failpoint="http.submit.no_such_point")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert services.proxy_log() == []
