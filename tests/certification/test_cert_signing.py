"""Signed evidence: a verified artifact, and every way a tampered one must fail."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from certification.canonical_json import canonical_bytes, check_content_digest, with_content_digest
from certification.publish import EvidenceConflict, publish_bytes
from certification.signing import (
    CERTIFICATION_PREDICATE,
    ENVELOPE_SUFFIX,
    TEST_RESULT_PREDICATE,
    TEST_RESULT_SUFFIX,
    SigningError,
    build_test_result_predicate,
    generate_key,
    load_signer,
    sign_artifact,
)
from certification.verify import VerificationFailed, pae, verify_artifact


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory):
    return generate_key(tmp_path_factory.mktemp("keys"))


def _artifact(directory: Path, body: dict[str, object]) -> Path:
    path = directory / "remote_effect_fault_matrix.json"
    publish_bytes(path, canonical_bytes(with_content_digest(body)))
    return path


def _signed(tmp_path: Path, keys) -> Path:
    artifact = _artifact(tmp_path, {"schema_id": "restproof.test.v1", "rows": [{"id": "r1", "verdict": "PASS"}]})
    sign_artifact(
        artifact, load_signer(keys.private), predicate={"summary": "ok"},
        test_result=build_test_result_predicate(passed=True, configuration=[], passed_tests=["r1"], failed_tests=[]),
    )
    return artifact


def test_dsse_pae_matches_the_specification() -> None:
    assert pae("application/vnd.in-toto+json", b"{}") == b"DSSEv1 28 application/vnd.in-toto+json 2 {}"
    assert pae("t", "é".encode()) == "DSSEv1 1 t 2 é".encode()  # byte lengths, not characters


def test_a_signed_artifact_verifies_with_both_verifiers(tmp_path: Path, keys) -> None:
    artifact = _signed(tmp_path, keys)
    verified = verify_artifact(artifact, keys.public)
    assert verified.predicate_type == CERTIFICATION_PREDICATE
    assert verified.predicate == {"summary": "ok"}
    result = verify_artifact(artifact, keys.public, artifact.with_name(artifact.name + TEST_RESULT_SUFFIX))
    assert result.predicate_type == TEST_RESULT_PREDICATE
    assert result.predicate["result"] == "PASSED"


def test_one_changed_artifact_byte_is_refused(tmp_path: Path, keys) -> None:
    artifact = _signed(tmp_path, keys)
    data = bytearray(artifact.read_bytes())
    data[data.index(b"PASS")] = ord("F")  # PASS -> FASS, still valid JSON
    tampered = tmp_path / "copy" / artifact.name
    tampered.parent.mkdir()
    tampered.write_bytes(bytes(data))
    (tampered.parent / (artifact.name + ENVELOPE_SUFFIX)).write_bytes(
        artifact.with_name(artifact.name + ENVELOPE_SUFFIX).read_bytes()
    )
    with pytest.raises(VerificationFailed) as caught:
        verify_artifact(tampered, keys.public)
    assert caught.value.reason == "subject_mismatch"


def test_a_re_signed_statement_over_edited_content_fails_the_content_digest(tmp_path: Path, keys) -> None:
    body = with_content_digest({"schema_id": "s", "duplicates": 0})
    body["duplicates"] = 3  # edited after the digest was computed, then signed honestly
    artifact = tmp_path / "summary.json"
    artifact.write_bytes(canonical_bytes(body))
    sign_artifact(artifact, load_signer(keys.private), predicate={})
    with pytest.raises(VerificationFailed) as caught:
        verify_artifact(artifact, keys.public)
    assert caught.value.reason == "content_digest_mismatch"


def test_a_changed_payload_breaks_the_signature(tmp_path: Path, keys) -> None:
    artifact = _signed(tmp_path, keys)
    envelope_path = artifact.with_name(artifact.name + ENVELOPE_SUFFIX)
    envelope = json.loads(envelope_path.read_bytes())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"] = {"summary": "forged"}
    envelope["payload"] = base64.b64encode(canonical_bytes(statement)).decode()
    envelope_path.write_text(json.dumps(envelope))
    with pytest.raises(VerificationFailed) as caught:
        verify_artifact(artifact, keys.public)
    assert caught.value.reason == "bad_signature"


def test_another_key_is_refused(tmp_path: Path, keys) -> None:
    artifact = _signed(tmp_path, keys)
    other = generate_key(tmp_path / "other")
    with pytest.raises(VerificationFailed) as caught:
        verify_artifact(artifact, other.public)
    assert caught.value.reason == "bad_signature"


@pytest.mark.parametrize("envelope", [b"not json", b"[]", b'{"payloadType":"x","payload":"","signatures":[]}',
                                      b'{"payloadType":"application/vnd.in-toto+json","payload":"%%%",'
                                      b'"signatures":[{"sig":"AA=="}]}'])
def test_malformed_envelopes_are_stable_errors(tmp_path: Path, keys, envelope: bytes) -> None:
    artifact = _signed(tmp_path, keys)
    bad = tmp_path / "bad.dsse.json"
    bad.write_bytes(envelope)
    with pytest.raises(VerificationFailed) as caught:
        verify_artifact(artifact, keys.public, bad)
    assert caught.value.reason in {"malformed_envelope", "wrong_payload_type"}


def test_evidence_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    assert publish_bytes(path, b"1") is True
    assert publish_bytes(path, b"1") is False
    with pytest.raises(EvidenceConflict):
        publish_bytes(path, b"2")
    assert path.read_bytes() == b"1"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".publish-")]


def test_keygen_refuses_to_replace_a_key_and_keeps_the_private_key_private(tmp_path: Path) -> None:
    paths = generate_key(tmp_path)
    assert paths.private.stat().st_mode & 0o077 == 0
    with pytest.raises(SigningError):
        generate_key(tmp_path)


def test_content_digest_round_trip_and_refusals() -> None:
    body = with_content_digest({"b": [1, "ж"], "a": None})
    assert check_content_digest(body)
    assert not check_content_digest({**body, "a": 1})
    for bad in (float("nan"), {1: "x"}, object()):
        with pytest.raises(ValueError):
            canonical_bytes({"v": bad})
