"""``certify verify DIR``: a whole run, not one file.

Every signed artifact of the run (each JSON beside its ``.dsse.json`` envelope, and its test-result
envelope when there is one) must verify against the pinned key, the matrix and the summary must be
among them, and every history file must be the one the signed matrix states: its SHA-256 equal to the
row's ``history_digest``. A history the matrix does not name, or a named one that is missing, is a
problem too: evidence is either bound to a signature or it is not evidence.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from certification.gate import ARTIFACTS
from certification.history_artifacts import HISTORIES, history_path
from certification.signing import ENVELOPE_SUFFIX, TEST_RESULT_SUFFIX
from certification.verify import VerificationFailed, VerifiedEvidence, verify_artifact

REQUIRED = ("remote_effect_fault_matrix.json", "certification_summary.json")


@dataclass(frozen=True, slots=True)
class RunVerification:
    verified: tuple[VerifiedEvidence, ...]
    histories: int
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems


def _artifacts_dir(directory: Path) -> Path:
    nested = directory / ARTIFACTS
    return nested if nested.is_dir() else directory


def _history_problems(base: Path, matrix_path: Path) -> tuple[int, list[str]]:
    problems: list[str] = []
    named: set[Path] = set()
    matrix = json.loads(matrix_path.read_bytes())
    for row in matrix.get("rows", []):
        for sink, entry in row.get("sinks", {}).items():
            digest = entry.get("history_digest")
            if digest is None:
                continue
            path = history_path(base, str(row.get("row_id")), str(sink))
            if path is None:
                problems.append(f"{row.get('row_id')}/{sink}: not a safe history name")
                continue
            named.add(path)
            if not path.is_file():
                problems.append(f"{path.relative_to(base)}: named by the signed matrix, missing")
            elif "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                problems.append(f"{path.relative_to(base)}: not the history the signed matrix states")
    for path in sorted((base / HISTORIES).glob("*/*.json")) if (base / HISTORIES).is_dir() else []:
        if path not in named:
            problems.append(f"{path.relative_to(base)}: a history the signed matrix does not name")
    return len(named), problems


def verify_run(directory: Path, public_key: Path) -> RunVerification:
    base = _artifacts_dir(directory)
    artifacts = sorted(path for path in base.glob("*.json") if not path.name.endswith(".dsse.json"))
    problems = [f"{name}: missing" for name in REQUIRED if not (base / name).is_file()]
    verified: list[VerifiedEvidence] = []
    for artifact in artifacts:
        envelopes = [artifact.with_name(artifact.name + ENVELOPE_SUFFIX)]
        test_result = artifact.with_name(artifact.name + TEST_RESULT_SUFFIX)
        if test_result.exists():
            envelopes.append(test_result)
        for envelope in envelopes:
            try:
                verified.append(verify_artifact(artifact, public_key, envelope))
            except VerificationFailed as exc:
                problems.append(f"{envelope.name}: {exc.reason}: {exc.detail}")
    histories = 0
    if (base / REQUIRED[0]).is_file() and not any(p.startswith(REQUIRED[0]) for p in problems):
        histories, history_problems = _history_problems(base, base / REQUIRED[0])
        problems.extend(history_problems)
    return RunVerification(tuple(verified), histories, tuple(problems))
