"""The offline verifier, one rule at a time: each test fails when that rule alone is broken,
including the rules the second verifier (securesystemslib) would otherwise mask. Every refusal is
asserted by its stable reason code, because ``certify verify`` exits with ``verify.<reason>``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cert_evidence_support import (
    envelope_document,
    envelope_of,
    sign_by_hand,
    statement_bytes,
    subject_of,
    write_artifact,
    write_envelope,
)
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from securesystemslib.signer import SSlibKey

from certification.signing import KeyPaths, generate_key, load_signer, sign_artifact
from certification.verify import VerificationFailed, library_verify, verify_artifact, verify_envelope_signature

# The documented bounds (docs/certification.md, "Limits"): hard-coded here on purpose, so a changed
# bound in the module is a failing test, not a test that follows it.
ENVELOPE_LIMIT = 4 * 1024 * 1024
KEY_LIMIT = 64 * 1024
ARTIFACT_LIMIT = 256 * 1024 * 1024


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> KeyPaths:
    return generate_key(tmp_path_factory.mktemp("verify-keys"))


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> KeyPaths:
    return generate_key(tmp_path_factory.mktemp("verify-other"))


def _signed(tmp_path: Path, keys: KeyPaths, name: str = "summary.json") -> Path:
    artifact = write_artifact(tmp_path, name)
    sign_artifact(artifact, load_signer(keys.private), predicate={"summary": "ok"})
    return artifact


def _keyid(keys: KeyPaths) -> str:
    return str(SSlibKey.from_crypto(serialization.load_pem_public_key(keys.public.read_bytes())).keyid)


def _reason(artifact: Path, key: Path, envelope: Path | None = None) -> str:
    with pytest.raises(VerificationFailed) as caught:
        verify_artifact(artifact, key, envelope)
    return caught.value.reason


def _pad(path: Path, size: int) -> None:
    """Trailing whitespace (still the same JSON / PEM) up to exactly ``size`` bytes."""
    data = path.read_bytes()
    path.write_bytes(data + b"\n" * (size - len(data)))


def test_an_envelope_of_exactly_the_limit_verifies_and_one_byte_more_is_too_large(tmp_path: Path,
                                                                                  keys: KeyPaths) -> None:
    artifact = _signed(tmp_path, keys)
    _pad(envelope_of(artifact), ENVELOPE_LIMIT)
    assert verify_artifact(artifact, keys.public).predicate == {"summary": "ok"}
    _pad(envelope_of(artifact), ENVELOPE_LIMIT + 1)
    with pytest.raises(VerificationFailed) as caught:
        verify_artifact(artifact, keys.public)
    assert caught.value.reason == "too_large" and caught.value.detail.startswith("envelope ")


def test_a_public_key_file_over_its_limit_is_too_large(tmp_path: Path, keys: KeyPaths) -> None:
    artifact = _signed(tmp_path, keys)
    key = tmp_path / "padded.pub"
    key.write_bytes(keys.public.read_bytes())
    _pad(key, KEY_LIMIT + 1)
    with pytest.raises(VerificationFailed) as caught:
        verify_artifact(artifact, key)
    assert caught.value.reason == "too_large" and caught.value.detail.startswith("public key ")


def test_an_artifact_over_its_limit_is_refused_before_it_is_read(tmp_path: Path, keys: KeyPaths) -> None:
    artifact = _signed(tmp_path, keys)
    os.truncate(artifact, ARTIFACT_LIMIT + 1)  # sparse: costs no disk, and the verifier only stats it
    with pytest.raises(VerificationFailed) as caught:
        verify_artifact(artifact, keys.public)
    assert caught.value.reason == "too_large" and caught.value.detail.startswith("artifact ")


def test_a_device_as_envelope_is_unreadable_not_parsed(tmp_path: Path, keys: KeyPaths) -> None:
    # /dev/null has no size to bound; read, it would yield b"" (and a FIFO or /dev/zero would block or
    # never end): only regular files are evidence.
    assert _reason(_signed(tmp_path, keys), keys.public, Path("/dev/null")) == "unreadable"


def test_a_path_the_system_cannot_open_is_unreadable(tmp_path: Path, keys: KeyPaths) -> None:
    assert _reason(_signed(tmp_path, keys), keys.public, tmp_path / ("x" * 300)) == "unreadable"  # ENAMETOOLONG


def _edit(artifact: Path, change: Callable[[dict[str, Any]], object]) -> None:
    document = json.loads(envelope_of(artifact).read_bytes())
    change(document)
    write_envelope(envelope_of(artifact), document)


def _insert_bang(text: str) -> str:
    return text[:4] + "!" + text[4:]


@pytest.mark.parametrize("change", [
    lambda d: d.update(payload=123),
    lambda d: d.update(signatures=5),
    lambda d: d.update(signatures=[]),
    lambda d: d.update(signatures=["abc", *d["signatures"]]),
    lambda d: d.update(signatures=[{"keyid": "k", "sig": 5}, *d["signatures"]]),
    lambda d: d.update(signatures=[*d["signatures"], {"keyid": "k"}]),
    lambda d: d.update(payload="é" + d["payload"]),
    lambda d: d.update(payload=_insert_bang(d["payload"])),
    lambda d: d["signatures"][0].update(sig=_insert_bang(d["signatures"][0]["sig"])),
], ids=["payload-int", "signatures-int", "no-signature", "signature-not-object", "sig-not-string",
        "one-signature-without-sig", "payload-non-ascii", "payload-stray-char", "sig-stray-char"])
def test_each_malformed_envelope_field_is_malformed_envelope(tmp_path: Path, keys: KeyPaths,
                                                            change: Callable[[dict[str, Any]], object]) -> None:
    artifact = _signed(tmp_path, keys)
    _edit(artifact, change)
    assert _reason(artifact, keys.public) == "malformed_envelope"


def test_a_deeply_nested_envelope_is_malformed_not_a_crash(tmp_path: Path, keys: KeyPaths) -> None:
    artifact = _signed(tmp_path, keys)
    envelope_of(artifact).write_text("[" * 200_000)
    assert _reason(artifact, keys.public) == "malformed_envelope"


def test_an_honestly_signed_envelope_of_another_payload_type_is_refused(tmp_path: Path, keys: KeyPaths) -> None:
    artifact = write_artifact(tmp_path)
    sign_by_hand(artifact, load_signer(keys.private), statement_bytes([subject_of(artifact)]), "application/json")
    assert _reason(artifact, keys.public) == "wrong_payload_type"


def _write_key(path: Path, key: Any) -> Path:
    path.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo))
    return path


@pytest.mark.parametrize("kind", ["text", "rsa", "p384", "ed25519"])
def test_a_key_that_is_not_ecdsa_p256_is_bad_key(tmp_path: Path, keys: KeyPaths, kind: str) -> None:
    artifact = _signed(tmp_path, keys)
    key = tmp_path / "k.pub"
    if kind == "text":
        key.write_text("not a key")
    else:
        _write_key(key, {"rsa": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
                         "p384": lambda: ec.generate_private_key(ec.SECP384R1()),
                         "ed25519": ed25519.Ed25519PrivateKey.generate}[kind]())
    assert _reason(artifact, key) == "bad_key"


def test_a_good_signature_after_a_foreign_one_still_verifies(tmp_path: Path, keys: KeyPaths, other: KeyPaths) -> None:
    artifact = write_artifact(tmp_path)
    payload = statement_bytes([subject_of(artifact)], predicate={"n": 1})
    write_envelope(envelope_of(artifact),
                   envelope_document(payload, [load_signer(other.private), load_signer(keys.private)]))
    evidence = verify_artifact(artifact, keys.public)
    assert evidence.keyids == (_keyid(keys),) and evidence.predicate == {"n": 1}


def test_the_verifier_returns_the_signed_payload_and_the_keyids_that_verified(tmp_path: Path, keys: KeyPaths) -> None:
    payload = statement_bytes([])
    document = envelope_document(payload, [load_signer(keys.private)])
    assert verify_envelope_signature(json.dumps(document).encode(), keys.public.read_bytes()) == (
        payload, (_keyid(keys),))
    del document["signatures"][0]["keyid"]  # optional in DSSE: reported as empty, never invented
    assert verify_envelope_signature(json.dumps(document).encode(), keys.public.read_bytes()) == (payload, ("",))


def test_the_second_opinion_rejects_on_its_own(keys: KeyPaths, other: KeyPaths) -> None:
    good = json.dumps(envelope_document(statement_bytes([]), [load_signer(keys.private)])).encode()
    library_verify(good, keys.public.read_bytes())  # accepts: raises nothing
    foreign = json.dumps(envelope_document(statement_bytes([]), [load_signer(other.private)])).encode()
    no_type = json.dumps({k: v for k, v in json.loads(good).items() if k != "payloadType"}).encode()
    for raw in (foreign, b"not json", no_type):  # VerificationError, ValueError, KeyError inside the library
        with pytest.raises(VerificationFailed) as caught:
            library_verify(raw, keys.public.read_bytes())
        assert caught.value.reason == "library_rejected"


@pytest.mark.parametrize("payload", [
    lambda artifact: b"not json",
    lambda artifact: b"[]",
    lambda artifact: statement_bytes([subject_of(artifact)], kind="https://in-toto.io/Statement/v0.1"),
], ids=["not-json", "not-object", "other-statement-type"])
def test_an_honestly_signed_payload_that_is_not_a_statement_v1_is_refused(tmp_path: Path, keys: KeyPaths,
                                                                          payload: Callable[[Path], bytes]) -> None:
    artifact = write_artifact(tmp_path)
    sign_by_hand(artifact, load_signer(keys.private), payload(artifact))
    assert _reason(artifact, keys.public) == "malformed_statement"


def _signed_with_subjects(tmp_path: Path, keys: KeyPaths, subjects: Callable[[dict[str, Any]], Any],
                          omit: tuple[str, ...] = ()) -> Path:
    artifact = write_artifact(tmp_path)
    sign_by_hand(artifact, load_signer(keys.private), statement_bytes(subjects(subject_of(artifact)), omit=omit))
    return artifact


def test_a_statement_without_subjects_names_nothing(tmp_path: Path, keys: KeyPaths) -> None:
    assert _reason(_signed_with_subjects(tmp_path / "a", keys, lambda s: [], ()), keys.public) == "subject_mismatch"
    assert _reason(_signed_with_subjects(tmp_path / "b", keys, lambda s: [], ("subject",)),
                   keys.public) == "subject_mismatch"


@pytest.mark.parametrize("subjects", [
    lambda s: ["not-an-object", s],
    lambda s: [{"name": s["name"], "digest": "abc"}, s],
    lambda s: [{"name": "other.json", "digest": s["digest"]}, s],
], ids=["string-first", "digest-not-object-first", "other-artifact-first"])
def test_one_matching_subject_among_others_is_enough(tmp_path: Path, keys: KeyPaths,
                                                     subjects: Callable[[dict[str, Any]], Any]) -> None:
    artifact = _signed_with_subjects(tmp_path, keys, subjects)
    assert verify_artifact(artifact, keys.public).artifact == artifact


def test_the_right_bytes_under_another_name_are_not_this_artifact(tmp_path: Path, keys: KeyPaths) -> None:
    artifact = _signed(tmp_path, keys)
    renamed = tmp_path / "renamed.json"
    renamed.write_bytes(artifact.read_bytes())
    assert _reason(renamed, keys.public, envelope_of(artifact)) == "subject_mismatch"


def test_a_signed_non_json_artifact_verifies_without_a_content_digest(tmp_path: Path, keys: KeyPaths) -> None:
    artifact = tmp_path / "report.html"
    artifact.write_bytes(b"<html>not json</html>")
    sign_artifact(artifact, load_signer(keys.private), predicate={})
    assert verify_artifact(artifact, keys.public).sha256 == subject_of(artifact)["digest"]["sha256"]


@pytest.mark.parametrize(("data", "reason"), [(b"not json", "malformed_artifact"), (b"[1]", "content_digest_mismatch")])
def test_a_signed_json_artifact_must_be_an_object_with_its_digest(tmp_path: Path, keys: KeyPaths, data: bytes,
                                                                  reason: str) -> None:
    artifact = tmp_path / "matrix.json"
    artifact.write_bytes(data)
    sign_artifact(artifact, load_signer(keys.private), predicate={})
    assert _reason(artifact, keys.public) == reason


def test_a_hand_built_envelope_verifies_when_nothing_is_wrong_with_it(tmp_path: Path, keys: KeyPaths) -> None:
    """Else the refusals above could come from the fixture, not from the rule they name."""
    artifact = _signed_with_subjects(tmp_path, keys, lambda s: [s])
    assert verify_artifact(artifact, keys.public).keyids == (_keyid(keys),)
