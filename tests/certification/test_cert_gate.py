"""The gate: passes an equal run, fails with a clear list on each kind of regression, and refuses
evidence whose signature does not verify."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from certification.canonical_json import canonical_bytes, with_content_digest
from certification.gate import ARTIFACTS, gate
from certification.publish import publish_bytes
from certification.signing import generate_key, load_signer, sign_artifact

SAFE = {"duplicates": 0, "false_successes": 0, "unproved_resends": 0, "silent_losses": 0}


def _run(root: Path, key: Path, *, verdicts: dict[str, str], totals: dict[str, int] | None = None,
         valid: bool = True, ratio: float | None = None) -> Path:
    base = root / ARTIFACTS
    rows = [{"row_id": row_id, "sinks": {"reference": {"verdict": verdict}}} for row_id, verdict in verdicts.items()]
    documents: dict[str, dict[str, Any]] = {
        "remote_effect_fault_matrix.json": {"schema_id": "m", "rows": rows},
        "certification_summary.json": {"schema_id": "s", "certified_sink": "reference", "valid": valid,
                                       "baseline_not_caught": [] if valid else ["sync.x:naive-retry"],
                                       "totals": {"reference": {**SAFE, **(totals or {})}},
                                       "verdict": "PASS" if valid else "INVALID"},
    }
    if ratio is not None:
        documents["throughput_benchmark.json"] = {"schema_id": "b", "ratios": {
            "reference_vs_naive": {"value": ratio, "tolerance": 0.1, "better": "higher"}}}
    signer = load_signer(key)
    for name, body in documents.items():
        path = base / name
        publish_bytes(path, canonical_bytes(with_content_digest(body)))
        sign_artifact(path, signer, predicate={})
    return root


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory):
    return generate_key(tmp_path_factory.mktemp("gate-keys"))


def test_an_equal_run_passes(tmp_path: Path, keys) -> None:
    baseline = _run(tmp_path / "b", keys.private, verdicts={"a": "PASS", "b": "PASS"}, ratio=0.95)
    current = _run(tmp_path / "c", keys.private, verdicts={"a": "PASS", "b": "PASS"}, ratio=0.93)
    result = gate(baseline, current, baseline_key=keys.public, current_key=keys.public)
    assert result.passed and result.rows_compared == 2


@pytest.mark.parametrize(("change", "expected"), [
    ({"verdicts": {"a": "PASS", "b": "FAIL"}}, "b: passed in the baseline, FAIL now"),
    ({"verdicts": {"a": "PASS"}}, "b: in the baseline, missing now"),
    ({"verdicts": {"a": "PASS", "b": "PASS"}, "totals": {"duplicates": 1}}, "reference: duplicates = 1"),
    ({"verdicts": {"a": "PASS", "b": "PASS"}, "valid": False}, "the current run is invalid"),
    ({"verdicts": {"a": "PASS", "b": "PASS"}, "ratio": 0.5}, "throughput_benchmark.reference_vs_naive"),
])
def test_each_regression_fails_the_gate(tmp_path: Path, keys, change: dict[str, Any], expected: str) -> None:
    baseline = _run(tmp_path / "b", keys.private, verdicts={"a": "PASS", "b": "PASS"}, ratio=0.95)
    current = _run(tmp_path / "c", keys.private, **change)
    result = gate(baseline, current, baseline_key=keys.public, current_key=keys.public)
    assert not result.passed
    assert any(expected in problem for problem in result.problems), result.problems


def test_a_baseline_signed_by_another_key_is_refused(tmp_path: Path, keys) -> None:
    other = generate_key(tmp_path / "other")
    baseline = _run(tmp_path / "b", other.private, verdicts={"a": "PASS"})
    current = _run(tmp_path / "c", keys.private, verdicts={"a": "PASS"})
    result = gate(baseline, current, baseline_key=keys.public, current_key=keys.public)
    assert not result.passed and result.problems[0].startswith("signature:")
