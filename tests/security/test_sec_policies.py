"""TLS/network policies by reference and the deny-only revocation list, as files an operator edits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sink.contracts.errors import ExitClass
from sink.contracts.security_policy import NetworkPolicy
from sink.security.errors import SecurityRefusal
from sink.security.policies import PolicyStore
from sink.security.revocation import (
    OpenGate,
    RevocationGate,
    gate_from_environ,
    read_revocations,
    revoke,
)

PROFILE = "sha256:" + "a" * 64
BINDING = "sha256:" + "b" * 64
OTHER = "sha256:" + "c" * 64


def _refusal(action: object) -> SecurityRefusal:
    with pytest.raises(SecurityRefusal) as raised:
        action()  # type: ignore[operator]
    return raised.value


def test_builtin_policies_and_unknown_ones_refuse(tmp_path: Path) -> None:
    store = PolicyStore(None)
    assert store.tls("loopback-plaintext@1").ca_bundle_ref == "system"
    assert store.network("loopback-only@1").allows("127.0.0.5")
    assert _refusal(lambda: store.tls("corporate-public-tls@1")).code == "transport.tls.policy_unknown"
    assert _refusal(lambda: store.network("reference-egress@1")).code == "transport.network.policy_unknown"
    assert PolicyStore.from_environ({"RESTPROOF_POLICY_DIR": str(tmp_path)})._directory == tmp_path


def test_policy_files_are_closed_and_name_their_own_id(tmp_path: Path) -> None:
    (tmp_path / "tls").mkdir()
    (tmp_path / "network").mkdir()
    (tmp_path / "tls" / "private-ca@1.yaml").write_text(
        "id: private-ca@1\ndescription: d\nca_bundle_ref: file:///etc/ca.pem\nminimum_version: TLSv1.3\n")
    (tmp_path / "tls" / "lax@1.yaml").write_text("id: lax@1\ndescription: d\nverify: false\n")
    (tmp_path / "tls" / "moved@1.yaml").write_text("id: other@1\ndescription: d\n")
    (tmp_path / "network" / "egress@2.yaml").write_text(
        "id: egress@2\ndescription: d\nallowed_networks: [10.20.0.0/16]\ntoken_origins: [https://login.example]\n")
    (tmp_path / "network" / "hostbits@1.yaml").write_text("id: hostbits@1\ndescription: d\n"
                                                          "allowed_networks: [10.20.0.1/16]\n")
    store = PolicyStore(tmp_path)
    assert store.tls("private-ca@1").minimum_version == "TLSv1.3"
    assert store.network("egress@2").token_origins == ("https://login.example",)
    lax = _refusal(lambda: store.tls("lax@1"))
    assert lax.code == "transport.tls.policy_invalid" and "verify" in lax.detail  # no switch to turn TLS off
    assert _refusal(lambda: store.tls("moved@1")).code == "transport.tls.policy_invalid"
    assert _refusal(lambda: store.network("hostbits@1")).code == "transport.network.policy_invalid"
    # No file of that name in the directory: the built-in.
    assert store.network("loopback-only@1").allowed_networks == ("127.0.0.0/8", "::1/128")


def test_address_allowlist_compares_mapped_ipv6_as_ipv4() -> None:
    policy = NetworkPolicy(id="n@1", description="d", allowed_networks=("10.0.0.0/8", "fd00::/8"))
    assert policy.allows("10.1.2.3") and policy.allows("fd00::1")
    assert not policy.allows("127.0.0.1") and not policy.allows("169.254.169.254")
    assert policy.allows("::ffff:10.1.2.3")
    assert not policy.allows("::ffff:127.0.0.1") and not policy.allows("not-an-address")


def test_revocation_gate_reads_the_list_at_every_check(tmp_path: Path) -> None:
    path = tmp_path / "revocations.yaml"
    gate = RevocationGate(path, profile_contract_digest=PROFILE, binding_digest=BINDING)
    missing = _refusal(gate.assert_submit_allowed)
    assert missing.code == "security.revocation_list_unavailable" and missing.exit_class is ExitClass.UNAVAILABLE
    path.write_text(json.dumps({"schema_id": "restproof.revocations.v1", "revoked": []}))
    gate.assert_submit_allowed()
    revoke(path, "binding", OTHER, "another binding")
    gate.assert_submit_allowed()  # someone else's digest
    revoke(path, "profile", BINDING)  # my binding's digest, but as a profile: not a match
    gate.assert_submit_allowed()
    revoke(path, "binding", BINDING, "compromised key")
    refused = _refusal(gate.assert_submit_allowed)
    assert refused.code == "security.revoked" and refused.exit_class is ExitClass.EFFECT_UNKNOWN_OR_MANUAL
    assert BINDING in refused.detail
    revoke(path, "binding", BINDING, "compromised key")  # idempotent
    assert len(read_revocations(path).revoked) == 3
    profile_gate = RevocationGate(tmp_path / "p.yaml", profile_contract_digest=PROFILE, binding_digest=OTHER)
    revoke(tmp_path / "p.yaml", "profile", PROFILE)
    assert _refusal(profile_gate.assert_submit_allowed).code == "security.revoked"


def test_revocation_list_fails_closed_and_is_optional(tmp_path: Path) -> None:
    path = tmp_path / "revocations.yaml"
    path.write_text("schema_id: restproof.revocations.v1\nrevoked: [{kind: binding, digest: nope}]\n")
    gate = gate_from_environ({"RESTPROOF_REVOCATION_LIST": str(path)}, profile_contract_digest=PROFILE,
                             binding_digest=BINDING)
    assert _refusal(gate.assert_submit_allowed).code == "security.revocation_list_invalid"
    path.write_text("revoked: [")
    assert _refusal(gate.assert_submit_allowed).code == "security.revocation_list_unavailable"
    assert isinstance(gate_from_environ({}, profile_contract_digest=PROFILE, binding_digest=BINDING), OpenGate)
