"""Bench artifacts: canonical, signed like the fault matrix, in the shape the gate and the report
read; the gate fails on an injected bench regression in either direction and passes within tolerance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from certification.artifacts import write_artifacts
from certification.bench.artifact import NOTE, BenchResult, artifact_path, write
from certification.canonical_json import canonical_bytes, check_content_digest
from certification.gate import gate
from certification.publish import EvidenceConflict
from certification.signing import decode_payload, load_signer, sign_artifact
from certification.verify import verify_artifact


def _result(*, name: str = "throughput", delivery: float = 0.95, rss: float = 1.1, passed: bool = True) -> BenchResult:
    result = BenchResult(name, {"rows": [1000], "sink": "reference"})
    result.ratio("delivery_rows_per_s", delivery, tolerance=0.1, better="higher")
    result.ratio("rss_growth", rss, tolerance=0.1, better="lower")
    result.plot("throughput_rows_per_s", title="t", x_label="rows", y_label="rows/s",
                lines={"sink": [(1000.0, 500.0)], "naive-loop": [(1000.0, 520.0)]})
    result.check("1000.sink.0", passed, "effects=1 rows=1000/1000")
    return result


def _run_dir(root: Path, result: BenchResult) -> Path:
    """A complete signed run: an (empty) fault matrix and summary beside one bench artifact."""
    paths = write_artifacts(root, [], seed=0, certified="reference")
    path = write(root, result, None)
    signer = load_signer(root / "keys" / "restproof-evidence.key")
    for name in ("matrix", "summary"):
        sign_artifact(paths[name], signer, predicate={})
    assert path == artifact_path(root, result.name)
    return root


def test_the_artifact_is_canonical_signed_and_in_the_agreed_shape(tmp_path: Path) -> None:
    path = write(tmp_path, _result(), None)
    assert path.name == "throughput_benchmark.json"
    evidence = verify_artifact(path, tmp_path / "keys" / "restproof-evidence.pub")
    assert evidence.sha256
    document = json.loads(path.read_bytes())
    assert path.read_bytes() == canonical_bytes(document) and check_content_digest(document)
    assert document["note"] == NOTE and "noise" in document["note"]
    assert document["machine"]["cpus"] >= 1 and "kernel" in document["machine"]
    assert document["ratios"]["delivery_rows_per_s"] == {"value": 0.95, "tolerance": 0.1, "better": "higher"}
    assert document["series"]["throughput_rows_per_s"] == {
        "title": "t", "x_label": "rows", "y_label": "rows/s",
        "lines": {"sink": [[1000.0, 500.0]], "naive-loop": [[1000.0, 520.0]]}}
    assert document["verdict"] == "PASS"


def test_a_failed_check_is_a_failed_verdict_and_a_failed_test_result(tmp_path: Path) -> None:
    path = write(tmp_path, _result(passed=False), None)
    assert json.loads(path.read_bytes())["verdict"] == "FAIL"
    envelope = json.loads(path.with_name(path.name + ".test-result.dsse.json").read_text())
    statement = json.loads(decode_payload(envelope))
    assert statement["predicate"]["result"] == "FAILED"
    assert statement["predicate"]["failedTests"] == ["1000.sink.0"]


def test_evidence_is_never_overwritten(tmp_path: Path) -> None:
    write(tmp_path, _result(delivery=0.95), None)
    with pytest.raises(EvidenceConflict):
        write(tmp_path, _result(delivery=0.5), None)


@pytest.mark.parametrize(("current", "expected"), [
    ({"delivery": 0.5}, "throughput_benchmark.delivery_rows_per_s: 0.500 vs baseline 0.950"),
    ({"rss": 2.0}, "throughput_benchmark.rss_growth: 2.000 vs baseline 1.100"),
])
def test_the_gate_fails_on_an_injected_bench_regression(tmp_path: Path, current: dict[str, Any],
                                                        expected: str) -> None:
    baseline = _run_dir(tmp_path / "baseline", _result())
    now = _run_dir(tmp_path / "current", _result(**current))
    result = gate(baseline, now, baseline_key=baseline / "keys" / "restproof-evidence.pub",
                  current_key=now / "keys" / "restproof-evidence.pub")
    assert not result.passed
    assert any(expected in problem for problem in result.problems), result.problems


def test_the_gate_passes_within_tolerance(tmp_path: Path) -> None:
    baseline = _run_dir(tmp_path / "baseline", _result())
    now = _run_dir(tmp_path / "current", _result(delivery=0.87, rss=1.2))
    result = gate(baseline, now, baseline_key=baseline / "keys" / "restproof-evidence.pub",
                  current_key=now / "keys" / "restproof-evidence.pub")
    assert result.passed, result.problems
