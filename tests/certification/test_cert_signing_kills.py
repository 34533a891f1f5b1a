"""Signing, one rule at a time: the key files and their protection, the exact in-toto statement and
DSSE envelope a third party (cosign, in-toto verifiers) reads, the test-result verdict, and the
refusals of unusable keys. Names and type URIs are hard-coded: they are the published format
(docs/certification.md), so a changed constant must fail here, not be followed by the test."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import stat
from pathlib import Path

import pytest
from cert_evidence_support import write_artifact
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from certification.signing import (
    KeyPaths,
    SigningError,
    build_test_result_predicate,
    decode_payload,
    generate_key,
    load_public_key,
    load_signer,
    sign_artifact,
)

IN_TOTO = "application/vnd.in-toto+json"
STATEMENT_V1 = "https://in-toto.io/Statement/v1"
CERTIFICATION = "https://restproof.dev/attestation/rest-sink-certification/v1"
TEST_RESULT = "https://in-toto.io/attestation/test-result/v0.1"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> KeyPaths:
    return generate_key(tmp_path_factory.mktemp("signing-keys"))


def test_keygen_writes_the_documented_file_names_into_a_new_nested_directory(tmp_path: Path) -> None:
    paths = generate_key(tmp_path / "out" / "keys")
    assert (paths.private, paths.public) == (tmp_path / "out/keys/restproof-evidence.key",
                                             tmp_path / "out/keys/restproof-evidence.pub")
    assert paths.private.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert paths.public.read_text().startswith("-----BEGIN PUBLIC KEY-----")


def test_keygen_into_an_existing_directory_and_the_private_key_is_owner_read_write_only(tmp_path: Path) -> None:
    paths = generate_key(tmp_path, "other")
    assert stat.S_IMODE(paths.private.stat().st_mode) == 0o600
    assert paths.private.name == "other.key"


@pytest.mark.parametrize("present", ["key", "pub"])
def test_keygen_refuses_when_either_half_of_the_pair_exists(tmp_path: Path, present: str) -> None:
    existing = tmp_path / f"restproof-evidence.{present}"
    existing.write_text("keep me")
    with pytest.raises(SigningError):
        generate_key(tmp_path)
    assert existing.read_text() == "keep me"
    assert [path.name for path in tmp_path.iterdir()] == [existing.name]


def test_the_signer_loaded_from_the_private_key_matches_the_public_key(keys: KeyPaths) -> None:
    signer = load_signer(keys.private)
    assert signer.public_key.keyid == load_public_key(keys.public).keyid


def _encrypted_key(path: Path) -> Path:
    key = ec.generate_private_key(ec.SECP256R1())
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.BestAvailableEncryption(b"secret-zq9")))
    return path


@pytest.mark.parametrize("kind", ["missing", "not-pem", "encrypted"])
def test_an_unusable_private_key_is_a_signing_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "k.key"
    if kind == "not-pem":
        path.write_text("not a key")
    elif kind == "encrypted":
        _encrypted_key(path)
    with pytest.raises(SigningError) as caught:
        load_signer(path)
    assert str(path) in str(caught.value) and "secret-zq9" not in str(caught.value)


@pytest.mark.parametrize("kind", ["missing", "not-pem"])
def test_an_unusable_public_key_is_a_signing_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "k.pub"
    if kind == "not-pem":
        path.write_text("not a key")
    with pytest.raises(SigningError):
        load_public_key(path)


def _statement(envelope: Path) -> dict[str, object]:
    statement: dict[str, object] = json.loads(base64.b64decode(json.loads(envelope.read_bytes())["payload"]))
    return statement


def test_signing_writes_exactly_the_published_statements(tmp_path: Path, keys: KeyPaths) -> None:
    artifact = write_artifact(tmp_path, "remote_effect_fault_matrix.json")
    result = build_test_result_predicate(passed=True, configuration=[], passed_tests=["r1"], failed_tests=[])
    written = sign_artifact(artifact, load_signer(keys.private), predicate={"summary": "ok"}, test_result=result)
    assert written == (tmp_path / "remote_effect_fault_matrix.json.dsse.json",
                       tmp_path / "remote_effect_fault_matrix.json.test-result.dsse.json")
    subject = [{"name": artifact.name, "digest": {"sha256": hashlib.sha256(artifact.read_bytes()).hexdigest()}}]
    assert _statement(written[0]) == {"_type": STATEMENT_V1, "subject": subject, "predicateType": CERTIFICATION,
                                      "predicate": {"summary": "ok"}}
    assert _statement(written[1]) == {"_type": STATEMENT_V1, "subject": subject, "predicateType": TEST_RESULT,
                                      "predicate": result}
    for path in written:
        envelope = json.loads(path.read_bytes())
        assert envelope["payloadType"] == IN_TOTO
        assert [sorted(signature) for signature in envelope["signatures"]] == [["keyid", "sig"]]


def test_the_envelope_file_is_stable_pretty_json_with_a_final_newline(tmp_path: Path, keys: KeyPaths) -> None:
    artifact = write_artifact(tmp_path)
    (path,) = sign_artifact(artifact, load_signer(keys.private), predicate={})
    data = path.read_bytes()
    assert data == json.dumps(json.loads(data), sort_keys=True, indent=2).encode() + b"\n"


def test_without_a_test_result_only_the_certification_envelope_is_written(tmp_path: Path, keys: KeyPaths) -> None:
    artifact = write_artifact(tmp_path)
    assert sign_artifact(artifact, load_signer(keys.private), predicate={}) == (
        tmp_path / "summary.json.dsse.json",)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["summary.json", "summary.json.dsse.json"]


@pytest.mark.parametrize(("passed", "failed", "warned", "result"), [
    (True, [], [], "PASSED"),
    (True, ["r2"], [], "FAILED"),
    (False, [], [], "FAILED"),
    (True, [], ["r3"], "WARNED"),
    (False, [], ["r3"], "FAILED"),
    (True, ["r2"], ["r3"], "FAILED"),
])
def test_the_test_result_verdict(passed: bool, failed: list[str], warned: list[str], result: str) -> None:
    configuration = [{"name": "catalog", "uri": "scenarios/x.yaml"}]
    predicate = build_test_result_predicate(passed=passed, configuration=configuration, passed_tests=["r1"],
                                            failed_tests=failed, warned_tests=warned)
    assert predicate == {"result": result, "configuration": configuration, "passedTests": ["r1"],
                         "warnedTests": warned, "failedTests": failed}


def test_decode_payload_returns_the_signed_bytes_and_refuses_what_is_not_strict_base64() -> None:
    assert decode_payload({"payload": "e30="}) == b"{}"
    for envelope in ({}, {"payload": 5}):
        with pytest.raises(SigningError):
            decode_payload(envelope)
    with pytest.raises(binascii.Error):  # lenient decoding would drop the "!" and return b"{}"
        decode_payload({"payload": "e3!0="})
