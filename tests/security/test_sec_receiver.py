"""`delivery run` against the real mock receiver's own TLS listener (`--tls-dir`: a trustme CA and
client certificates made at its start-up) and auth section, once per V1 method; and the
receiver's refused client certificates (wrong subject, expired, foreign CA).

The receiver checks the credential itself (401/403 problem+json otherwise) and counts what it
refused (`/_admin/auth`), so a pass means the sink authenticated exactly as the method says.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from sec_support import TIMEOUTS, binding, post

from sink.contracts.transport import SendCertainty
from sink.security.policies import PolicyStore
from sink.security.wire import open_binding_transport
from sink.transport import default_registry

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
DELIVERY = str(Path(sys.executable).with_name("delivery"))
WORKLOAD = str(REPO / "scenarios/workloads/measurements-sync.yaml")
SECRET = "sentinel-receiver-secret-9e8f"
PASSPHRASE = "sentinel-receiver-passphrase-1a2b"
AUTH = {
    "bearer": {"method": "bearer", "token_env": "SEC_RECEIVER_SECRET"},
    "api_key_header": {"method": "api_key_header", "header": "X-API-Key", "key_env": "SEC_RECEIVER_SECRET"},
    "basic": {"method": "basic", "username": "loader", "password_env": "SEC_RECEIVER_SECRET"},
    "oauth2_client_credentials": {"method": "oauth2_client_credentials", "client_id": "sink-client",
                                  "client_secret_env": "SEC_RECEIVER_SECRET", "token_ttl_seconds": 1},
    "mtls": {"method": "mtls", "subject_cn": "sink-loader"},
}


class Receiver:
    def __init__(self, work: Path, method: str) -> None:
        behaviour = yaml.safe_load((REPO / "scenarios/receivers/json-batches.yaml").read_text())
        behaviour["auth"] = AUTH[method]
        work.mkdir(parents=True, exist_ok=True)
        (work / "behaviour.yaml").write_text(yaml.safe_dump(behaviour))
        self.log = work / "receiver.log"
        self.tls_dir = work / "tls"
        env = {**os.environ, "SEC_RECEIVER_SECRET": SECRET, "SEC_RECEIVER_PASSPHRASE": PASSPHRASE}
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [str(Path(sys.executable).with_name("mock-receiver")), "serve", "--host", "127.0.0.1", "--port", "0",
                 "--admin-port", "0", "--behaviour", str(work / "behaviour.yaml"), "--state-dir",
                 str(work / "state"), "--tls-dir", str(self.tls_dir),
                 "--client-key-passphrase-env", "SEC_RECEIVER_PASSPHRASE"],
                stdout=log, stderr=log, env=env)
        ready = work / "state" / "endpoints.json"
        deadline = time.monotonic() + 60
        while not ready.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mock-receiver did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.05)
        time.sleep(0.1)
        endpoints = json.loads(ready.read_text())
        self.data_url: str = endpoints["data_url"]
        self.admin_url: str = endpoints["admin_url"]
        self.policy_dir = work / "policies"
        (self.policy_dir / "tls").mkdir(parents=True, exist_ok=True)
        (self.policy_dir / "tls" / "receiver-ca@1.yaml").write_text(
            f"id: receiver-ca@1\ndescription: the receiver's start-up CA\nca_bundle_ref: file://{endpoints['ca_file']}\n")

    def auth_counts(self) -> dict[str, Any]:
        return dict(httpx.get(self.admin_url + "/_admin/auth", timeout=30).json())

    def effects(self) -> list[dict[str, Any]]:
        return list(httpx.get(self.admin_url + "/_admin/effects", timeout=30).json()["items"])

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _binding_fields(method: str, receiver: Receiver) -> dict[str, Any]:
    if method == "bearer":
        return {"credential_ref": "env://SEC_SINK_SECRET"}
    if method == "api_key_header":
        return {"credential_ref": "env://SEC_SINK_SECRET", "api_key_header": "X-API-Key"}
    if method == "basic":
        return {"credential_ref": "env://SEC_SINK_BASIC"}
    if method == "oauth2_client_credentials":
        return {"credential_ref": "env://SEC_SINK_SECRET", "oauth_client_id": "sink-client",
                "oauth_token_endpoint": f"{receiver.data_url}/oauth/token"}
    return {"credential_ref": f"file://{receiver.tls_dir / 'client-encrypted.key'}",
            "client_certificate_ref": f"file://{receiver.tls_dir / 'client.pem'}",
            "client_key_passphrase_ref": "env://SEC_SINK_PASSPHRASE"}


@pytest.mark.parametrize("method", list(AUTH))
def test_delivery_authenticates_to_the_mock_receiver_over_tls(method: str, tmp_path: Path) -> None:
    receiver = Receiver(tmp_path / "receiver", method)
    try:
        document = yaml.safe_load((REPO / "scenarios/bindings/mock_measurements.yaml").read_text())
        document.update({"authority": receiver.data_url, "auth_provider": method, "tls_policy_ref": "receiver-ca@1",
                         **_binding_fields(method, receiver)})
        bindings = tmp_path / "bindings"
        bindings.mkdir()
        (bindings / "mock_measurements.yaml").write_text(yaml.safe_dump(document))
        env = {**os.environ, "SEC_SINK_SECRET": SECRET, "SEC_SINK_BASIC": f"loader:{SECRET}",
               "SEC_SINK_PASSPHRASE": PASSPHRASE, "RESTPROOF_POLICY_DIR": str(receiver.policy_dir)}
        env.pop("RESTPROOF_FAILPOINT", None)
        state = tmp_path / "state"
        done = subprocess.run([DELIVERY, "run", WORKLOAD, "--scope-from", "2026-03-01", "--scope-to", "2026-03-05",
                               "--bindings-dir", str(bindings), "--state-dir", str(state), "--format", "json"],
                              check=False, capture_output=True, text=True, env=env, timeout=240)
        assert done.returncode == 0, (done.stdout, done.stderr, receiver.log.read_text()[-2000:])
        counts = receiver.auth_counts()
        assert counts["method"] == method and not counts["requests_refused"], counts
        assert counts["requests_accepted"] >= 2
        assert sorted(e["scope_start"] for e in receiver.effects()) == ["2026-03-01", "2026-03-03"]
        if method == "oauth2_client_credentials":
            assert counts["tokens_issued"] >= 1
        if method in ("api_key_header", "mtls"):
            assert counts["requests_with_authorization_header"] == 0  # the credential is not a header here
        blobs = [done.stdout, done.stderr, receiver.log.read_text(),
                 httpx.get(receiver.admin_url + "/_admin/requests", timeout=30).text]
        blobs += [p.read_bytes().decode("latin-1") for p in state.rglob("*") if p.is_file()]
        for blob in blobs:
            assert SECRET not in blob and PASSPHRASE not in blob
    finally:
        receiver.stop()


def test_the_receivers_wrong_expired_and_foreign_client_certificates_are_refused(tmp_path: Path) -> None:
    receiver = Receiver(tmp_path / "receiver", "mtls")
    try:
        store = PolicyStore(receiver.policy_dir)
        tls = receiver.tls_dir
        outcomes = {}
        for name in ("client", "client-wrong-subject", "client-expired", "client-foreign"):
            bound = binding(receiver.data_url, "mtls", tls_policy_ref="receiver-ca@1",
                            network_policy_ref="loopback-only@1",
                            credential_ref=f"file://{tls / (name + '.key')}",
                            client_certificate_ref=f"file://{tls / (name + '.pem')}")
            wire = open_binding_transport(bound, timeouts=TIMEOUTS, policies=store, resolver=default_registry({}))
            try:
                outcomes[name] = wire.transport.send(post("/mock/v1/resources/measurements/summary"),
                                                     timeouts=TIMEOUTS)
            finally:
                wire.close()
        assert outcomes["client"].response is not None and outcomes["client"].response.status != 401
        wrong = outcomes["client-wrong-subject"].response
        assert wrong is not None and wrong.status == 403
        for name in ("client-expired", "client-foreign"):
            assert outcomes[name].response is None  # refused at the handshake
            assert outcomes[name].evidence.certainty is not SendCertainty.RESPONSE_RECEIVED
    finally:
        receiver.stop()
