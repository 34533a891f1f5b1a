"""Signed fixtures for the evidence-chain kill tests (gate, verify, signing).

An artifact signed the normal way, and envelopes built by hand with securesystemslib directly (a
statement that is not ours, another payload type, extra signatures): evidence that only a broken
verifier would accept, or that a correct one must accept although it looks unusual. Everything is
written under the caller's tmp_path; keys are generated per module, never shared on disk."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from securesystemslib.dsse import Envelope
from securesystemslib.signer import CryptoSigner

from certification.canonical_json import canonical_bytes, with_content_digest

IN_TOTO = "application/vnd.in-toto+json"
STATEMENT_V1 = "https://in-toto.io/Statement/v1"
SUFFIX = ".dsse.json"


def envelope_of(artifact: Path) -> Path:
    """Where sign_artifact puts an artifact's certification envelope (docs/certification.md)."""
    return artifact.with_name(artifact.name + SUFFIX)


def write_artifact(directory: Path, name: str = "summary.json", body: Mapping[str, Any] | None = None) -> Path:
    """A canonical JSON artifact whose content digest holds."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(canonical_bytes(with_content_digest(body or {"schema_id": "s", "duplicates": 0})))
    return path


def subject_of(artifact: Path) -> dict[str, Any]:
    return {"name": artifact.name, "digest": {"sha256": hashlib.sha256(artifact.read_bytes()).hexdigest()}}


def statement_bytes(subjects: Any, *, kind: str = STATEMENT_V1, predicate: Mapping[str, Any] | None = None,
                    omit: Sequence[str] = ()) -> bytes:
    body: dict[str, Any] = {"_type": kind, "subject": subjects, "predicateType": "https://example.test/p",
                            "predicate": dict(predicate or {})}
    return canonical_bytes({key: value for key, value in body.items() if key not in omit})


def envelope_document(payload: bytes, signers: Sequence[CryptoSigner], payload_type: str = IN_TOTO) -> dict[str, Any]:
    envelope = Envelope(payload=payload, payload_type=payload_type, signatures={})
    for signer in signers:
        envelope.sign(signer)
    document: dict[str, Any] = envelope.to_dict()
    return document


def write_envelope(path: Path, document: Mapping[str, Any]) -> Path:
    path.write_text(json.dumps(document))
    return path


def sign_by_hand(artifact: Path, signer: CryptoSigner, payload: bytes, payload_type: str = IN_TOTO) -> Path:
    """Sign ``payload`` honestly and place it as the artifact's envelope."""
    return write_envelope(envelope_of(artifact), envelope_document(payload, [signer], payload_type))

