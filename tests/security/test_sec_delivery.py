"""`delivery` end to end over TLS with OAuth client credentials: the real mock receiver behind an
in-test HTTPS gateway that checks the tokens it issued (1 s lifetime) and forwards the rest.

Threat-model cases: a token refresh mid-delivery keeps the operation and every key; a revoked
binding blocks a new submit while inspect and reconcile still work; a principal swap cannot
resume an existing operation; two tenants sharing one receiver account never collide on a
receiver mutation key; sentinel secrets reach no output, journal, artifact or receiver log.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from sec_server import Gateway, Pki, TlsListener

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
DELIVERY = str(Path(sys.executable).with_name("delivery"))
WORKLOAD = str(REPO / "scenarios/workloads/measurements-sync.yaml")
SCOPE = ["--scope-from", "2026-03-01", "--scope-to", "2026-03-05"]
# Three children: the profile runs two at once, so a worker killed mid-request has sent one or two,
# and at least one child is still to be submitted when the next host takes over.
SCOPE_THREE = ["--scope-from", "2026-03-01", "--scope-to", "2026-03-07"]
SCOPE_FOUR = ["--scope-from", "2026-03-01", "--scope-to", "2026-03-09"]
CLIENT_SECRET = "sentinel-clientsecret-e2e-5d6e"
ADMIN = {"X-Restproof-Admin": "1"}


@dataclass
class Stack:
    receiver: subprocess.Popen[bytes]
    admin_url: str
    gateway: Gateway
    listener: TlsListener
    policy_dir: Path
    receiver_log: Path

    def effects(self) -> list[dict[str, Any]]:
        return list(httpx.get(self.admin_url + "/_admin/effects", timeout=30).json()["items"])

    def receiver_requests(self) -> list[dict[str, Any]]:
        return list(httpx.get(self.admin_url + "/_admin/requests", timeout=30).json()["items"])

    def reset(self) -> None:
        httpx.post(self.admin_url + "/_admin/reset", json={}, headers=ADMIN, timeout=30).raise_for_status()
        self.listener.seen.clear()
        self.gateway.issued.clear()

    def mutations(self) -> list[str]:
        """The Idempotency-Key of every mutation that reached the gateway."""
        return [s.headers.get("idempotency-key", "") for s in self.listener.seen if s.method == "POST"
                and s.path != "/oauth/token"]


def _wait_json(path: Path, process: subprocess.Popen[bytes]) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.exists():
            try:
                return dict(json.loads(path.read_text()))
            except ValueError:
                pass
        if process.poll() is not None:
            raise RuntimeError("mock-receiver exited")
        time.sleep(0.05)
    raise RuntimeError("mock-receiver not ready")


def _start(work: Path, behaviour: str) -> Stack:
    log = work / "receiver.log"
    with log.open("wb") as sink_log:
        receiver = subprocess.Popen(
            [str(Path(sys.executable).with_name("mock-receiver")), "serve", "--host", "127.0.0.1", "--port", "0",
             "--admin-port", "0", "--behaviour", str(REPO / f"scenarios/receivers/{behaviour}.yaml"),
             "--state-dir", str(work / "receiver")], stdout=sink_log, stderr=sink_log)
    endpoints = _wait_json(work / "receiver" / "endpoints.json", receiver)
    pki = Pki(work / "pki")
    gateway = Gateway("oauth2_client_credentials", f"client-1:{CLIENT_SECRET}", upstream=endpoints["data_url"],
                      token_lifetime_s=1)
    listener = TlsListener(pki, gateway)
    policy_dir = work / "policies"
    (policy_dir / "tls").mkdir(parents=True)
    (policy_dir / "tls" / "test-ca@1.yaml").write_text(
        f"id: test-ca@1\ndescription: test CA\nca_bundle_ref: file://{pki.ca_file}\n")
    return Stack(receiver, endpoints["admin_url"], gateway, listener, policy_dir, log)


def _stop(stack: Stack) -> None:
    stack.listener.close()
    stack.receiver.send_signal(signal.SIGTERM)
    try:
        stack.receiver.wait(timeout=10)
    except subprocess.TimeoutExpired:
        stack.receiver.kill()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    started = _start(tmp_path_factory.mktemp("sec-delivery"), "json-batches")
    try:
        yield started
    finally:
        _stop(started)


@pytest.fixture(scope="module")
def async_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    started = _start(tmp_path_factory.mktemp("sec-delivery-async"), "dataset-jobs")
    try:
        yield started
    finally:
        _stop(started)


def _bindings(tmp_path: Path, stack: Stack, **changes: Any) -> Path:
    document = yaml.safe_load((REPO / "scenarios/bindings/mock_measurements.yaml").read_text())
    document.update({
        "authority": stack.listener.url, "auth_provider": "oauth2_client_credentials",
        "credential_ref": "env://SEC_CLIENT_SECRET", "oauth_client_id": "client-1",
        "oauth_token_endpoint": f"{stack.listener.url}/oauth/token", "tls_policy_ref": "test-ca@1",
        **changes,
    })
    directory = tmp_path / f"bindings-{len(list(tmp_path.glob('bindings-*')))}"
    directory.mkdir()
    (directory / "mock_measurements.yaml").write_text(yaml.safe_dump(document))
    return directory


def _delivery(stack: Stack, *args: str, failpoint: str | None = None, revocations: Path | None = None,
              extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEC_CLIENT_SECRET": CLIENT_SECRET, "RESTPROOF_POLICY_DIR": str(stack.policy_dir),
           **(extra_env or {})}
    for name in ("RESTPROOF_FAILPOINT", "RESTPROOF_REVOCATION_LIST"):
        env.pop(name, None)
    if failpoint:
        env["RESTPROOF_FAILPOINT"] = failpoint
    if revocations is not None:
        env["RESTPROOF_REVOCATION_LIST"] = str(revocations)
    return subprocess.run([DELIVERY, *args], check=False, capture_output=True, text=True, env=env, timeout=240)


def _run(stack: Stack, bindings: Path, state: Path, *extra: str, scope: list[str] = SCOPE,
         **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return _delivery(stack, "run", WORKLOAD, *scope, "--bindings-dir", str(bindings), "--state-dir", str(state),
                     "--format", "json", *extra, **kwargs)


def _assert_no_secret(stack: Stack, *texts: str, state: Path | None = None) -> None:
    secrets = [CLIENT_SECRET, *stack.gateway.issued]
    blobs = [text.encode() for text in texts] + [stack.receiver_log.read_bytes(),
                                                 json.dumps(stack.receiver_requests()).encode()]
    if state is not None:
        blobs += [path.read_bytes() for path in state.rglob("*") if path.is_file()]
    for secret in secrets:
        for blob in blobs:
            assert secret.encode() not in blob


def test_token_refresh_mid_delivery_keeps_the_operation_and_every_key(tmp_path: Path, stack: Stack) -> None:
    stack.reset()
    # Four children, two at a time, each mutation held 1.2 s: the second pair starts after the first
    # 1 s token has expired, whatever the timing of the first pair.
    stack.gateway.forward_delay_s = 1.2
    try:
        done = _run(stack, _bindings(tmp_path, stack), tmp_path / "state", scope=SCOPE_FOUR)
    finally:
        stack.gateway.forward_delay_s = 0.0
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert len(stack.gateway.issued) >= 2, "the delivery outlived its first token"
    assert stack.gateway.expired_refusals == 0 and stack.gateway.refused == 0
    keys = stack.mutations()
    assert len(keys) == len(result["children"]) == 4 and len(set(keys)) == 4
    assert all(child["status"] == "completed" for child in result["children"])
    assert sorted(e["scope_start"] for e in stack.effects()) == ["2026-03-01", "2026-03-03", "2026-03-05",
                                                                 "2026-03-07"]
    # The same delivery planned again (no token involved) names the same keys: identities are
    # derived from the plan, never from a credential.
    replanned = _run(stack, _bindings(tmp_path, stack), tmp_path / "state", scope=SCOPE_FOUR)
    assert replanned.returncode == 0 and json.loads(replanned.stdout)["parent_id"] == result["parent_id"]
    assert stack.mutations() == keys, "a completed delivery is not sent again"
    _assert_no_secret(stack, done.stdout, done.stderr, replanned.stdout, state=tmp_path / "state")


def _binding_digest(stack: Stack, bindings: Path) -> str:
    shown = _delivery(stack, "plan", WORKLOAD, "--bindings-dir", str(bindings), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    return str(json.loads(shown.stdout)["identities"]["receiver_binding_semantics_digest"])


def test_revoked_binding_blocks_new_submits_and_the_takeover_waits_for_a_valid_binding(tmp_path: Path,
                                                                                      stack: Stack) -> None:
    stack.reset()
    bindings, state = _bindings(tmp_path, stack), tmp_path / "state"
    revocations = tmp_path / "revocations.yaml"
    revocations.write_text('{"schema_id": "restproof.revocations.v1", "revoked": []}\n')
    first = _run(stack, bindings, state, "--worker-id", "host-a", "--lease-seconds", "1",
                 failpoint="http.submit.after_response_headers", revocations=revocations, scope=SCOPE_THREE)
    assert first.returncode == -9, first.stderr  # killed after the receiver answered child 1
    # The profile runs two children at once: the second may have been sent before host-a died.
    sent = len(stack.mutations())
    assert 1 <= sent <= 2
    revocations.write_text(json.dumps({"schema_id": "restproof.revocations.v1", "revoked": [
        {"kind": "binding", "digest": _binding_digest(stack, bindings), "reason": "SEC-1"}]}))
    time.sleep(1.2)  # host-a's mutation lease expires
    blocked = _run(stack, bindings, state, "--worker-id", "host-b", revocations=revocations, scope=SCOPE_THREE)
    assert blocked.returncode == 4, blocked.stderr
    assert json.loads(blocked.stdout)["errors"][0]["code"] == "security.revoked"
    assert len(stack.mutations()) == sent, "no new submit after the revocation"
    inspected = _delivery(stack, "inspect", "--operation-id", _parent_id(state), "--state-dir", str(state),
                          "--format", "json", revocations=revocations)
    assert inspected.returncode == 0, inspected.stderr
    view = json.loads(inspected.stdout)
    # host-a died after sending: each child it sent waits for its same-key replay under the certified
    # fence (the takeover), which the revocation holds back; nothing is called unknown, nothing is resent.
    taken = [c for c in view["children"] if c["axes"]["execution_state"] == "SUBMITTING"]
    assert len(taken) == sent, "each child host-a sent waits for its fenced replay"
    assert all(c["axes"]["remote_effect"] == "UNDETERMINED" and c["reason"] == "takeover_due" for c in taken)
    # The binding valid again: the replays are deduplicated by the fence, every effect exactly once.
    revocations.write_text('{"schema_id": "restproof.revocations.v1", "revoked": []}\n')
    resumed = _run(stack, bindings, state, "--worker-id", "host-b", revocations=revocations, scope=SCOPE_THREE)
    assert resumed.returncode == 0, resumed.stderr
    counts = Counter(effect["mutation_key"] for effect in stack.effects())
    assert counts and set(counts.values()) == {1}, counts
    _assert_no_secret(stack, first.stderr, blocked.stdout, blocked.stderr, resumed.stdout, state=state)


def _parent_id(state: Path) -> str:
    """The one parent admitted in ``state`` (the killed run printed nothing)."""
    with sqlite3.connect(state / "journal.sqlite3") as connection:
        (parent_id,), = connection.execute("SELECT parent_id FROM parents").fetchall()
    return str(parent_id)


def test_a_principal_swap_cannot_resume_an_existing_operation(tmp_path: Path, stack: Stack) -> None:
    stack.reset()
    state = tmp_path / "state"
    first = _run(stack, _bindings(tmp_path, stack), state, "--worker-id", "host-a", "--lease-seconds", "1",
                 failpoint="http.submit.after_response_headers", scope=SCOPE_THREE)
    assert first.returncode == -9, first.stderr
    sent, sent_keys = len(stack.mutations()), set(stack.mutations())
    assert 1 <= sent <= 2
    original = _parent_id(state)
    time.sleep(1.2)
    swapped = _run(stack, _bindings(tmp_path, stack, remote_principal_id="another-principal",
                                    remote_account_id="another-account"), state, "--worker-id", "host-b",
                   scope=SCOPE_THREE)
    assert swapped.returncode == 2, swapped.stderr
    assert json.loads(swapped.stdout)["errors"][0]["code"] == "REST_DELIVERY_INTENT_CONFLICT"
    assert len(stack.mutations()) == sent, "the swapped principal sent nothing"
    # A rotated secret (another reference, same principal) is the same binding identity: it resumes.
    rotated = _run(stack, _bindings(tmp_path, stack, credential_ref="env://SEC_ROTATED"), state,
                   "--worker-id", "host-c", extra_env={"SEC_ROTATED": CLIENT_SECRET}, scope=SCOPE_THREE)
    # host-a's children are taken over: replayed with their own keys under the certified fence, so a
    # key goes twice only for a child host-a sent, and every effect lands exactly once, on the same parent.
    assert rotated.returncode == 0, rotated.stderr
    assert json.loads(rotated.stdout)["parent_id"] == original
    repeated = {key for key, seen in Counter(stack.mutations()).items() if seen > 1}
    assert repeated <= sent_keys, "only host-a's requests are replayed"
    counts = Counter(effect["mutation_key"] for effect in stack.effects())
    assert counts and set(counts.values()) == {1}, counts
    _assert_no_secret(stack, swapped.stdout, swapped.stderr, rotated.stdout, state=state)


def test_two_tenants_sharing_one_receiver_account_never_share_a_mutation_key(tmp_path: Path, stack: Stack) -> None:
    stack.reset()
    bindings = _bindings(tmp_path, stack)
    environment = yaml.safe_load((REPO / "scenarios/environments/local.yaml").read_text())
    keys: dict[str, list[str]] = {}
    for tenant in ("tenant-a", "tenant-b"):
        path = tmp_path / f"{tenant}.yaml"
        path.write_text(yaml.safe_dump({**environment, "tenant_id": tenant}))
        before = len(stack.mutations())
        done = _run(stack, bindings, tmp_path / tenant, "--environment", str(path))
        assert done.returncode == 0, done.stderr
        keys[tenant] = stack.mutations()[before:]
    assert len(keys["tenant-a"]) == len(keys["tenant-b"]) == 2
    assert not set(keys["tenant-a"]) & set(keys["tenant-b"])
    # Each tenant's batches were applied as their own effects (no replay of the other's key).
    assert len(stack.effects()) == 4


def test_a_revoked_binding_still_polls_its_submitted_job(tmp_path: Path, async_stack: Stack) -> None:
    stack = async_stack
    stack.reset()
    bindings, state = _bindings(tmp_path, stack), tmp_path / "state"
    workload = str(REPO / "scenarios/workloads/measurements-async.yaml")
    detached = _delivery(stack, "run", workload, "--scope-from", "2026-03-01", "--scope-to", "2026-03-03",
                         "--bindings-dir", str(bindings), "--state-dir", str(state),
                         "--format", "json", "--mode", "detach")
    assert detached.returncode in (0, 3, 4), detached.stderr
    parent = json.loads(detached.stdout)["parent_id"]
    assert len(stack.mutations()) == 1  # async: one job at a time, child 1 submitted and pending
    revocations = tmp_path / "revocations.yaml"
    revocations.write_text(json.dumps({"schema_id": "restproof.revocations.v1", "revoked": [
        {"kind": "binding", "digest": _binding_digest(stack, bindings)}]}))
    polls_before = len([s for s in stack.listener.seen if s.method == "GET"])
    resumed = _delivery(stack, "resume", "--operation-id", parent, "--apply", "--state-dir", str(state),
                        "--format", "json", revocations=revocations)
    assert resumed.returncode == 0, resumed.stdout  # the submitted job was observed to its end
    assert json.loads(resumed.stdout)["children"][0]["status"] == "completed"
    assert len([s for s in stack.listener.seen if s.method == "GET"]) > polls_before, "polling went on"
    inspected = _delivery(stack, "inspect", "--operation-id", parent, "--state-dir", str(state), "--format", "json",
                          revocations=revocations)
    assert inspected.returncode == 0 and json.loads(inspected.stdout)["exit_code"] == 0
    # A new interval under the revoked binding: admitted, but never submitted.
    later = _delivery(stack, "run", workload, "--scope-from", "2026-03-03", "--scope-to", "2026-03-05",
                      "--bindings-dir", str(bindings), "--state-dir", str(state), "--format", "json",
                      revocations=revocations)
    assert later.returncode == 4, later.stdout
    assert json.loads(later.stdout)["errors"][0]["code"] == "security.revoked"
    assert len(stack.mutations()) == 1, "nothing new was submitted"
