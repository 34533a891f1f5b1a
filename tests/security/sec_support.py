"""Shared pieces of the wire-security tests: a binding snapshot, policies trusting a test CA, a
timeout vector and a small request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sec_server import Pki

from sink.contracts.plan import PlanBinding
from sink.contracts.profile_policy import TimeoutVector
from sink.contracts.transport import PreparedRequest
from sink.security.policies import PolicyStore
from sink.transport.body import BytesBody

TIMEOUTS = TimeoutVector(dns_ms=2000, connect_ms=2000, tls_ms=3000, write_ms=3000, read_ms=5000, idle_ms=5000,
                         request_total_ms=10000, operation_total_ms=60000)
SENTINELS = {
    "token": "sentinel-token-a1b2c3",
    "api_key": "sentinel-apikey-d4e5f6",
    "password": "sentinel-password-0a9b",
    "client_secret": "sentinel-clientsecret-77aa",
    "passphrase": "sentinel-passphrase-3c4d",
}


def post(path: str = "/mock/v1/items") -> PreparedRequest:
    return PreparedRequest(method="POST", path_and_query=path, semantic_headers=(("idempotency-key", "k-1"),),
                           content_type="application/json", body=BytesBody(b'{"rows": 1}'))


def policies(directory: Path, pki: Pki, *, networks: tuple[str, ...] = ("127.0.0.0/8",),
             token_origins: tuple[str, ...] = ()) -> PolicyStore:
    (directory / "tls").mkdir(parents=True, exist_ok=True)
    (directory / "network").mkdir(parents=True, exist_ok=True)
    (directory / "tls" / "test-ca@1.yaml").write_text(
        f"id: test-ca@1\ndescription: the test CA\nca_bundle_ref: file://{pki.ca_file}\n")
    origins = "".join(f"\n  - {origin}" for origin in token_origins)
    (directory / "network" / "test-net@1.yaml").write_text(
        "id: test-net@1\ndescription: test\nallowed_networks:" + "".join(f"\n  - {n}" for n in networks)
        + ("\ntoken_origins:" + origins if token_origins else "") + "\n")
    return PolicyStore(directory)


def binding(authority: str, method: str, **fields: Any) -> PlanBinding:
    document: dict[str, Any] = {
        "connection_ref": "test", "authority_origin": authority, "local": True, "auth_provider": method,
        "api_key_header": None, "credential_ref": None, "remote_principal_id": "principal-1",
        "remote_account_id": "account-1", "remote_resource_namespace": "ingest", "remote_identity": None,
        "tls_policy_ref": "test-ca@1", "network_policy_ref": "test-net@1",
    }
    document.update(fields)
    return PlanBinding.model_validate(document)
