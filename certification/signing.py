"""Signed evidence: an in-toto Statement v1 about an artifact, in a DSSE envelope (FIELD-NOTES,
"Signed evidence"), signed offline with an ECDSA P-256 file key through securesystemslib.

Layout beside an artifact ``X.json``: ``X.json.dsse.json`` (the project's certification predicate)
and ``X.json.test-result.dsse.json`` (the standard in-toto test-result predicate). Both envelopes
name the artifact by file name and SHA-256 of its exact bytes, so a third party verifies them with
the public key alone (``certify verify``, or cosign as docs/certification.md shows).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key
from securesystemslib.dsse import Envelope
from securesystemslib.signer import CryptoSigner, SSlibKey

from certification.canonical_json import canonical_bytes, sha256_hex
from certification.publish import publish_bytes

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
CERTIFICATION_PREDICATE = "https://restproof.dev/attestation/rest-sink-certification/v1"
TEST_RESULT_PREDICATE = "https://in-toto.io/attestation/test-result/v0.1"
ENVELOPE_SUFFIX = ".dsse.json"
TEST_RESULT_SUFFIX = ".test-result.dsse.json"


class SigningError(ValueError):
    """A key or artifact that cannot be used for signing (message names paths, never key bytes)."""


@dataclass(frozen=True, slots=True)
class KeyPaths:
    private: Path
    public: Path


def generate_key(directory: Path, name: str = "restproof-evidence") -> KeyPaths:
    """Write a new ECDSA P-256 key pair: ``NAME.key`` (PKCS#8 PEM, mode 0600) and ``NAME.pub``.

    Refuses to overwrite an existing key: replacing a signing key silently would orphan every
    baseline signed with it."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = KeyPaths(directory / f"{name}.key", directory / f"{name}.pub")
    for path in (paths.private, paths.public):
        if path.exists():
            raise SigningError(f"{path} exists; remove it first to replace the key")
    signer = CryptoSigner.generate_ecdsa()
    descriptor = os.open(paths.private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(signer.private_bytes)
    paths.public.write_text(str(signer.public_key.keyval["public"]))
    return paths


def load_signer(private_key_path: Path) -> CryptoSigner:
    try:
        key = load_pem_private_key(private_key_path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise SigningError(f"{private_key_path}: not a readable unencrypted PEM private key") from exc
    return CryptoSigner(key)


def load_public_key(public_key_path: Path) -> SSlibKey:
    try:
        key = load_pem_public_key(public_key_path.read_bytes())
    except (OSError, ValueError) as exc:
        raise SigningError(f"{public_key_path}: not a readable PEM public key") from exc
    return SSlibKey.from_crypto(key)


def statement(subject_name: str, subject_bytes: bytes, predicate_type: str, predicate: Mapping[str, Any]) -> bytes:
    body = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": subject_name, "digest": {"sha256": sha256_hex(subject_bytes)}}],
        "predicateType": predicate_type,
        "predicate": dict(predicate),
    }
    return canonical_bytes(body)


def envelope_for(payload: bytes, signer: CryptoSigner) -> dict[str, Any]:
    envelope = Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures={})
    envelope.sign(signer)
    document: dict[str, Any] = envelope.to_dict()
    return document


def build_test_result_predicate(
    *, passed: bool, configuration: Sequence[Mapping[str, str]], passed_tests: Sequence[str],
    failed_tests: Sequence[str], warned_tests: Sequence[str] = (),
) -> dict[str, Any]:
    result = "FAILED" if failed_tests or not passed else ("WARNED" if warned_tests else "PASSED")
    return {
        "result": result,
        "configuration": [dict(item) for item in configuration],
        "passedTests": list(passed_tests),
        "warnedTests": list(warned_tests),
        "failedTests": list(failed_tests),
    }


def sign_artifact(
    artifact: Path, signer: CryptoSigner, *, predicate: Mapping[str, Any],
    test_result: Mapping[str, Any] | None = None,
) -> tuple[Path, ...]:
    """Sign ``artifact`` (its exact bytes); publish the envelope(s) create-if-absent."""
    data = artifact.read_bytes()
    written = [artifact.with_name(artifact.name + ENVELOPE_SUFFIX)]
    envelope = envelope_for(statement(artifact.name, data, CERTIFICATION_PREDICATE, predicate), signer)
    publish_bytes(written[0], _envelope_bytes(envelope))
    if test_result is not None:
        written.append(artifact.with_name(artifact.name + TEST_RESULT_SUFFIX))
        result_envelope = envelope_for(statement(artifact.name, data, TEST_RESULT_PREDICATE, test_result), signer)
        publish_bytes(written[1], _envelope_bytes(result_envelope))
    return tuple(written)


def _envelope_bytes(envelope: Mapping[str, Any]) -> bytes:
    return json.dumps(envelope, sort_keys=True, indent=2).encode() + b"\n"


def decode_payload(envelope: Mapping[str, Any]) -> bytes:
    payload = envelope.get("payload")
    if not isinstance(payload, str):
        raise SigningError("envelope has no base64 payload")
    return base64.b64decode(payload, validate=True)
