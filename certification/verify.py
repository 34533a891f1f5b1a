"""Offline verification of signed evidence, twice over.

``verify_envelope`` is this project's own verifier: it rebuilds DSSE's pre-authentication encoding
(PAE = "DSSEv1" SP len(type) SP type SP len(body) SP body, byte lengths) and checks the ECDSA P-256
signature with ``cryptography`` directly, so a bug in the signing library cannot approve its own
output. ``library_verify`` asks securesystemslib as a second opinion (it only tries keys whose keyid
matches). Both must agree before an artifact is called verified; the statement must then name the
artifact's exact bytes and the artifact's own content digest must hold.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey

from certification.canonical_json import check_content_digest
from certification.signing import ENVELOPE_SUFFIX, PAYLOAD_TYPE, STATEMENT_TYPE

MAX_ENVELOPE_BYTES = 4 * 1024 * 1024
MAX_ARTIFACT_BYTES = 256 * 1024 * 1024


class VerificationFailed(ValueError):
    """The evidence does not verify; ``reason`` is a stable code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class VerifiedEvidence:
    artifact: Path
    sha256: str
    predicate_type: str
    predicate: Mapping[str, Any]
    keyids: tuple[str, ...]


def pae(payload_type: str, payload: bytes) -> bytes:
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def _read_bounded(path: Path, limit: int, what: str) -> bytes:
    try:
        if not path.is_file():
            raise VerificationFailed("unreadable", f"{what} {path} is not a regular file")
        if path.stat().st_size > limit:
            raise VerificationFailed("too_large", f"{what} {path} exceeds {limit} bytes")
        return path.read_bytes()
    except OSError as exc:
        raise VerificationFailed("unreadable", f"{what} {path}: {exc.strerror}") from None


def _parse_envelope(raw: bytes) -> tuple[str, bytes, list[tuple[str, bytes]]]:
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        raise VerificationFailed("malformed_envelope", "the envelope is not JSON") from None
    if not isinstance(document, dict):
        raise VerificationFailed("malformed_envelope", "the envelope is not a JSON object")
    payload_type, payload, signatures = document.get("payloadType"), document.get("payload"), document.get("signatures")
    if payload_type != PAYLOAD_TYPE:
        raise VerificationFailed("wrong_payload_type", f"payloadType must be {PAYLOAD_TYPE}")
    if not isinstance(payload, str) or not isinstance(signatures, list) or not signatures:
        raise VerificationFailed("malformed_envelope", "payload and at least one signature are required")
    try:
        body = base64.b64decode(payload, validate=True)
        parsed = [
            (str(item.get("keyid", "")), base64.b64decode(item["sig"], validate=True))
            for item in signatures
            if isinstance(item, dict) and isinstance(item.get("sig"), str)
        ]
    except (binascii.Error, ValueError):
        raise VerificationFailed("malformed_envelope", "payload or signature is not base64") from None
    if len(parsed) != len(signatures):
        raise VerificationFailed("malformed_envelope", "every signature needs a base64 sig")
    return payload_type, body, parsed


def verify_envelope_signature(raw_envelope: bytes, public_key_pem: bytes) -> tuple[bytes, tuple[str, ...]]:
    """Independent check: some signature verifies over the PAE with this key. Returns the payload."""
    payload_type, body, signatures = _parse_envelope(raw_envelope)
    try:
        key = load_pem_public_key(public_key_pem)
    except ValueError:
        raise VerificationFailed("bad_key", "the public key is not PEM") from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise VerificationFailed("bad_key", "the public key must be ECDSA P-256")
    message = pae(payload_type, body)
    good: list[str] = []
    for keyid, signature in signatures:
        try:
            key.verify(signature, message, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            continue
        good.append(keyid)
    if not good:
        raise VerificationFailed("bad_signature", "no signature verifies with the given public key")
    return body, tuple(good)


def library_verify(raw_envelope: bytes, public_key_pem: bytes) -> None:
    """Second opinion from securesystemslib (keyid-matched)."""
    key = SSlibKey.from_crypto(load_pem_public_key(public_key_pem))
    try:
        Envelope.from_dict(json.loads(raw_envelope)).verify([key], 1)
    except (VerificationError, ValueError, KeyError) as exc:
        raise VerificationFailed("library_rejected", type(exc).__name__) from None


def _statement(body: bytes) -> dict[str, Any]:
    try:
        statement = json.loads(body)
    except ValueError:
        raise VerificationFailed("malformed_statement", "the payload is not JSON") from None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise VerificationFailed("malformed_statement", f"the payload is not an {STATEMENT_TYPE}")
    return statement


def verify_artifact(artifact: Path, public_key: Path, envelope: Path | None = None) -> VerifiedEvidence:
    """Verify ``artifact`` against its envelope (default ``ARTIFACT.dsse.json``) and a public key."""
    envelope = envelope or artifact.with_name(artifact.name + ENVELOPE_SUFFIX)
    raw_envelope = _read_bounded(envelope, MAX_ENVELOPE_BYTES, "envelope")
    key_pem = _read_bounded(public_key, 64 * 1024, "public key")
    data = _read_bounded(artifact, MAX_ARTIFACT_BYTES, "artifact")
    body, keyids = verify_envelope_signature(raw_envelope, key_pem)
    library_verify(raw_envelope, key_pem)
    statement = _statement(body)
    digest = hashlib.sha256(data).hexdigest()
    subjects = statement.get("subject")
    named = isinstance(subjects, list) and any(
        isinstance(item, dict) and item.get("name") == artifact.name
        and isinstance(item.get("digest"), dict) and item["digest"].get("sha256") == digest
        for item in subjects
    )
    if not named:
        raise VerificationFailed("subject_mismatch", "the statement does not name this artifact's exact bytes")
    if artifact.suffix == ".json":
        try:
            document = json.loads(data)
        except ValueError:
            raise VerificationFailed("malformed_artifact", "the artifact is not JSON") from None
        if not isinstance(document, dict) or not check_content_digest(document):
            raise VerificationFailed("content_digest_mismatch", "the artifact's content_digest does not hold")
    predicate = statement.get("predicate")
    return VerifiedEvidence(
        artifact=artifact, sha256=digest, predicate_type=str(statement.get("predicateType")),
        predicate=predicate if isinstance(predicate, dict) else {}, keyids=keyids,
    )
