"""Read one ``certify run`` output directory for the report: the matrix, the summary, the bench
artifacts, the per-row histories, and the signature status of each.

Everything in the directory is hostile input: files are read with a size bound, parsed into
closed pydantic shapes (finite numbers only) and never trusted for a path (history files are found
by safe names only). The matrix and the summary must parse, or there is nothing to report
(``EvidenceUnreadable``); a bench artifact or a history that does not parse is shown as such.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from certification.airflow.evidence import ARTIFACT as AIRFLOW_ARTIFACT
from certification.airflow.evidence import AirflowAcceptance, load_acceptance
from certification.gate import ARTIFACTS
from certification.history_artifacts import history_path
from certification.signing import ENVELOPE_SUFFIX, TEST_RESULT_SUFFIX
from certification.verify import VerificationFailed, verify_artifact

MAX_JSON_BYTES = 64 * 1024 * 1024
MATRIX = "remote_effect_fault_matrix.json"
SUMMARY = "certification_summary.json"
_Model = TypeVar("_Model", bound=BaseModel)


class EvidenceUnreadable(ValueError):
    """The directory holds no readable matrix and summary: there is nothing to report."""


class _Open(BaseModel):
    """Unknown fields are ignored (newer producers add some); the ones read are typed and finite."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)


class SinkCell(_Open):
    verdict: str = Field(max_length=64)
    role: str = Field(default="", max_length=32)
    counters: dict[str, int] | None = None
    exit_codes: list[int] = []
    history_digest: str | None = None
    ending: str | None = Field(default=None, max_length=32)
    fault_fired: bool | None = None
    checks: dict[str, str] = {}
    reasons: list[str] = []


class Expectation(_Open):
    end: list[str] = []
    why: str | None = None


class MatrixRow(_Open):
    row_id: str = Field(max_length=500)
    family: str = ""
    expect: Expectation = Field(default_factory=Expectation)
    fault_plan: dict[str, Any] = {}
    seed_effect: str = ""
    caught_duplicating_expected: list[str] = []
    sinks: dict[str, SinkCell]


class Matrix(_Open):
    rows: list[MatrixRow]
    created_at: str = ""


class NotYet(_Open):
    why: str = Field(max_length=600)
    cells: int


class FaultSpace(_Open):
    cells: int = 0
    meaningful: int = 0
    covered: int = 0
    coverage: float = 0.0
    journal: str = ""
    journal_meaningful: int = 0
    journal_coverage: float = 0.0
    not_yet: list[NotYet] = []
    unexplained_count: int = 0


class Summary(_Open):
    certified_sink: str
    verdict: str
    valid: bool
    failed_rows: list[str] = []
    unverified_rows: list[str] = []
    baseline_not_caught: list[str] = []
    totals: dict[str, dict[str, int]] = {}
    endings: dict[str, int] = {}
    fault_space: FaultSpace | None = None
    seconds: dict[str, float] = {}


class Plot(_Open):
    title: str
    x_label: str
    y_label: str
    lines: dict[str, list[tuple[float, float]]]


class Ratio(_Open):
    value: float
    tolerance: float = 0.1
    better: str = "higher"


class Check(_Open):
    passed: bool
    detail: str = ""


class Bench(_Open):
    series: dict[str, Plot] = {}
    ratios: dict[str, Ratio] = {}
    checks: dict[str, Check] = {}
    """Correctness checks (nothing lost, nothing doubled...): a failed one fails the bench."""
    verdict: str = ""
    note: str = ""


class RequestRecord(_Open):
    seq: int
    at: float
    run: int = 0
    targets: list[str] | None = None
    fence: str | None = None
    forwarded: str
    response_delivered: bool
    faults: list[str] = []
    marked: bool = False


class EffectRecord(_Open):
    seq: int
    days: list[str] = []
    fence: str | None = None
    rows: int


class RunReport(_Open):
    index: int
    kind: str = ""
    exit_code: int
    timed_out: bool = False
    claims: dict[str, str] = {}


class FaultRecord(_Open):
    kind: str = ""
    fired: bool | None = None
    detail: str = ""
    target_day: str | None = None


class HistoryDoc(_Open):
    row_id: str
    universe: list[str] = []
    requests: list[RequestRecord]
    effects: list[EffectRecord]
    runs: list[RunReport]
    fault: FaultRecord = Field(default_factory=FaultRecord)
    ending: str = ""


@dataclass(frozen=True, slots=True)
class SignatureStatus:
    artifact: str
    envelope: str
    verified: bool
    detail: str


@dataclass(frozen=True, slots=True)
class LoadedHistory:
    """``bound``: the file's SHA-256 is the digest the (signed) matrix states for this row and sink."""

    history: HistoryDoc | None
    bound: bool
    problem: str = ""


@dataclass(frozen=True, slots=True)
class RunEvidence:
    matrix: Matrix
    summary: Summary
    benches: dict[str, Bench]
    histories: dict[tuple[str, str], LoadedHistory]
    signatures: list[SignatureStatus]
    problems: list[str] = field(default_factory=list)
    """Artifacts that exist but could not be read (a bench that does not parse)."""
    airflow: AirflowAcceptance | None = None
    """The Airflow provider's acceptance, when the run holds one (``certify airflow``)."""


def _read_json(path: Path) -> tuple[bytes, Any]:
    try:
        if not path.is_file():
            raise EvidenceUnreadable(f"{path.name} is missing")
        if path.stat().st_size > MAX_JSON_BYTES:
            raise EvidenceUnreadable(f"{path.name} exceeds {MAX_JSON_BYTES} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise EvidenceUnreadable(f"{path.name}: {exc.strerror}") from None
    try:
        return data, json.loads(data)
    except (ValueError, RecursionError):
        raise EvidenceUnreadable(f"{path.name} is not JSON") from None


def _validate(model: type[_Model], name: str, document: Any) -> _Model:
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])[:120]
        raise EvidenceUnreadable(f"{name}: {where or 'document'}: {first['msg']}") from None


def _parse(model: type[_Model], path: Path) -> _Model:
    return _validate(model, path.name, _read_json(path)[1])


def _signatures(path: Path, key: Path) -> list[SignatureStatus]:
    statuses = []
    for suffix in (ENVELOPE_SUFFIX, TEST_RESULT_SUFFIX):
        envelope = path.with_name(path.name + suffix)
        if suffix == TEST_RESULT_SUFFIX and not envelope.exists():
            continue  # the test-result envelope is optional; the statement envelope is not
        try:
            evidence = verify_artifact(path, key, envelope)
        except VerificationFailed as exc:
            statuses.append(SignatureStatus(path.name, envelope.name, False, f"{exc.reason}: {exc.detail}"))
        else:
            statuses.append(SignatureStatus(path.name, envelope.name, True, f"sha256:{evidence.sha256}"))
    return statuses


def _history(base: Path, row_id: str, sink: str, digest: str | None) -> LoadedHistory | None:
    path = history_path(base, row_id, sink)
    if path is None or not path.is_file():
        return None
    try:
        data, document = _read_json(path)
        history = _validate(HistoryDoc, path.name, document)
    except EvidenceUnreadable as exc:
        return LoadedHistory(None, False, str(exc))
    bound = digest == "sha256:" + hashlib.sha256(data).hexdigest()
    return LoadedHistory(history, bound, "" if bound else "its digest is not the one the matrix states")


def load_run(run_dir: Path, key: Path) -> RunEvidence:
    base = run_dir / ARTIFACTS
    matrix = _parse(Matrix, base / MATRIX)
    summary = _parse(Summary, base / SUMMARY)
    signatures = _signatures(base / MATRIX, key) + _signatures(base / SUMMARY, key)
    benches: dict[str, Bench] = {}
    problems: list[str] = []
    for path in sorted(base.glob("*_benchmark.json")):
        signatures.extend(_signatures(path, key))
        try:
            benches[path.stem] = _parse(Bench, path)
        except EvidenceUnreadable as exc:
            problems.append(str(exc))
    airflow = None
    if (base / AIRFLOW_ARTIFACT).exists():
        signatures.extend(_signatures(base / AIRFLOW_ARTIFACT, key))
        try:
            airflow = load_acceptance(base / AIRFLOW_ARTIFACT)
        except ValueError as exc:
            problems.append(str(exc))
    histories: dict[tuple[str, str], LoadedHistory] = {}
    for row in matrix.rows:
        for sink, cell in row.sinks.items():
            loaded = _history(base, row.row_id, sink, cell.history_digest)
            if loaded is not None:
                histories[(row.row_id, sink)] = loaded
    return RunEvidence(matrix, summary, benches, histories, signatures, problems, airflow)
