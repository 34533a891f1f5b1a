"""The regression gate, one rule at a time: every safety counter, the run's validity (fail closed
when it is not stated), the row comparison past a missing row, the ratio tolerance at its exact
boundary and its defaults, a bench artifact whose signature fails, and the identity conflict matrix
read from the signed run itself. Runs are tiny signed directories built in tmp_path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from certification.canonical_json import canonical_bytes, with_content_digest
from certification.gate import gate, identity_problems
from certification.signing import KeyPaths, generate_key, load_signer, sign_artifact

ARTIFACTS = Path("test_artifacts/connectors/rest")  # the layout `certify run` writes (docs/certification.md)
SAFE = {"duplicates": 0, "false_successes": 0, "unproved_resends": 0, "silent_losses": 0}
GOOD_IDENTITY = {"examples": 4, "failed": 0, "network_connections_before_conflict": 0,
                 "intent_conflict_ratio": 1.0, "identity_identical_ratio": 1.0}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> KeyPaths:
    return generate_key(tmp_path_factory.mktemp("gate-kill-keys"))


def _run(root: Path, keys: KeyPaths, *, verdicts: dict[str, str] | None = None, summary: dict[str, Any] | None = None,
         identity: dict[str, Any] | None = None, benches: dict[str, dict[str, Any]] | None = None,
         unstated: tuple[str, ...] = ()) -> Path:
    """A signed run: matrix, summary (without the ``unstated`` fields), optionally an identity matrix
    and bench artifacts (name -> ratios)."""
    rows = [{"row_id": row_id, "sinks": {"reference": {"verdict": verdict}}}
            for row_id, verdict in (verdicts or {"a": "PASS"}).items()]
    documents: dict[str, dict[str, Any]] = {
        "remote_effect_fault_matrix.json": {"schema_id": "m", "rows": rows},
        "certification_summary.json": {"schema_id": "s", "certified_sink": "reference", "valid": True,
                                       "baseline_not_caught": [], "totals": {"reference": dict(SAFE)},
                                       "verdict": "PASS", **(summary or {})},
    }
    for name in unstated:
        del documents["certification_summary.json"][name]
    if identity is not None:
        documents["identity_conflict_matrix.json"] = {"schema_id": "i", "totals": identity}
    for name, ratios in (benches or {}).items():
        documents[f"{name}_benchmark.json"] = {"schema_id": "b", "ratios": ratios}
    signer = load_signer(keys.private)
    for name, body in documents.items():
        path = root / ARTIFACTS / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(canonical_bytes(with_content_digest(body)))
        sign_artifact(path, signer, predicate={})
    return root


def _gate(baseline: Path, current: Path, keys: KeyPaths) -> tuple[str, ...]:
    return gate(baseline, current, baseline_key=keys.public, current_key=keys.public).problems


@pytest.mark.parametrize("counter", sorted(SAFE))
def test_each_safety_counter_alone_fails_the_gate(tmp_path: Path, keys: KeyPaths, counter: str) -> None:
    baseline = _run(tmp_path / "b", keys)
    current = _run(tmp_path / "c", keys, summary={"totals": {"reference": {**SAFE, counter: 2}}})
    assert _gate(baseline, current, keys) == (f"reference: {counter} = 2",)


@pytest.mark.parametrize("verdict", ["FAIL", "UNVERIFIED", "INVALID", "pass", None])
def test_a_run_whose_own_signed_verdict_is_not_pass_fails_the_gate(tmp_path: Path, keys: KeyPaths,
                                                                   verdict: str | None) -> None:
    baseline = _run(tmp_path / "b", keys)
    current = _run(tmp_path / "c", keys, summary={"verdict": verdict})
    assert _gate(baseline, current, keys) == (f"the current run's own signed verdict is {verdict}, not PASS",)
    unstated = _run(tmp_path / "u", keys, unstated=("verdict",))
    assert _gate(baseline, unstated, keys) == ("the current run's own signed verdict is None, not PASS",)


def test_counters_fail_the_gate_even_under_a_verdict_that_says_pass(tmp_path: Path, keys: KeyPaths) -> None:
    # The gate reads the counters itself: a summary whose verdict contradicts them is not believed.
    current = _run(tmp_path / "c", keys, summary={"totals": {"reference": {**SAFE, "duplicates": 1}}})
    assert _gate(_run(tmp_path / "b", keys), current, keys) == ("reference: duplicates = 1",)


def test_a_summary_that_does_not_say_it_is_valid_is_invalid(tmp_path: Path, keys: KeyPaths) -> None:
    baseline = _run(tmp_path / "b", keys)
    for name, current in (("absent", _run(tmp_path / "c1", keys, unstated=("valid",))),
                          ("null", _run(tmp_path / "c2", keys, summary={"valid": None}))):
        assert _gate(baseline, current, keys) == ("the current run is invalid: ",), name


def test_an_invalid_run_names_every_baseline_that_was_not_caught(tmp_path: Path, keys: KeyPaths) -> None:
    baseline = _run(tmp_path / "b", keys)
    current = _run(tmp_path / "c", keys, summary={"valid": False,
                                                  "baseline_not_caught": ["sync.x:naive-retry", "async.y:naive"]})
    assert _gate(baseline, current, keys) == ("the current run is invalid: sync.x:naive-retry, async.y:naive",)


def test_a_signature_failure_compares_no_row(tmp_path: Path, keys: KeyPaths) -> None:
    baseline = _run(tmp_path / "b", keys)
    current = _run(tmp_path / "c", keys)
    (current / ARTIFACTS / "certification_summary.json.dsse.json").unlink()
    result = gate(baseline, current, baseline_key=keys.public, current_key=keys.public)
    assert not result.passed and result.rows_compared == 0
    assert len(result.problems) == 1 and result.problems[0].startswith("signature: unreadable")


def test_rows_after_a_missing_row_are_still_compared(tmp_path: Path, keys: KeyPaths) -> None:
    baseline = _run(tmp_path / "b", keys, verdicts={"a": "PASS", "b": "PASS", "c": "PASS"})
    current = _run(tmp_path / "c", keys, verdicts={"b": "FAIL", "c": "PASS"})
    result = gate(baseline, current, baseline_key=keys.public, current_key=keys.public)
    assert result.problems == ("a: in the baseline, missing now", "b: passed in the baseline, FAIL now")
    assert result.rows_compared == 2


def test_a_row_that_failed_in_the_baseline_too_is_not_a_regression(tmp_path: Path, keys: KeyPaths) -> None:
    baseline = _run(tmp_path / "b", keys, verdicts={"a": "FAIL", "b": "PASS"})
    current = _run(tmp_path / "c", keys, verdicts={"a": "FAIL", "b": "PASS"})
    result = gate(baseline, current, baseline_key=keys.public, current_key=keys.public)
    assert result.passed and result.rows_compared == 2


def _ratio(value: float, **extra: Any) -> dict[str, Any]:
    return {"value": value, **extra}


@pytest.mark.parametrize(("before", "after"), [
    (_ratio(2.0, tolerance=0.25, better="higher"), _ratio(1.5, tolerance=0.25, better="higher")),
    (_ratio(2.0, tolerance=0.25, better="lower"), _ratio(2.5, tolerance=0.25, better="lower")),
    (_ratio(2.0, tolerance=0.25), _ratio(1.6, tolerance=0.25)),
], ids=["higher-at-the-boundary", "lower-at-the-boundary", "stated-tolerance-not-the-default"])
def test_a_ratio_exactly_at_its_tolerance_passes(tmp_path: Path, keys: KeyPaths, before: dict[str, Any],
                                                 after: dict[str, Any]) -> None:
    baseline = _run(tmp_path / "b", keys, benches={"t": {"r": before}})
    current = _run(tmp_path / "c", keys, benches={"t": {"r": after}})
    assert _gate(baseline, current, keys) == ()


@pytest.mark.parametrize(("before", "after", "expected"), [
    (_ratio(2.0), _ratio(1.7), "t_benchmark.r: 1.700 vs baseline 2.000 (tolerance 10%)"),  # higher is better by default
    (_ratio(2.0, tolerance=0.25, better="higher"), _ratio(1.49, tolerance=0.25, better="higher"),
     "t_benchmark.r: 1.490 vs baseline 2.000 (tolerance 25%)"),
    (_ratio(2.0, tolerance=0.25, better="lower"), _ratio(2.51, tolerance=0.25, better="lower"),
     "t_benchmark.r: 2.510 vs baseline 2.000 (tolerance 25%)"),
])
def test_a_ratio_beyond_its_tolerance_fails(tmp_path: Path, keys: KeyPaths, before: dict[str, Any],
                                            after: dict[str, Any], expected: str) -> None:
    baseline = _run(tmp_path / "b", keys, benches={"t": {"r": before}})
    current = _run(tmp_path / "c", keys, benches={"t": {"r": after}})
    assert _gate(baseline, current, keys) == (expected,)


def test_a_ratio_after_one_the_current_run_lacks_is_still_gated(tmp_path: Path, keys: KeyPaths) -> None:
    baseline = _run(tmp_path / "b", keys, benches={"t": {"a_gone": _ratio(1.0), "b_kept": _ratio(1.0)}})
    current = _run(tmp_path / "c", keys, benches={"t": {"b_kept": _ratio(0.5)}})
    assert _gate(baseline, current, keys) == ("t_benchmark.a_gone: in the baseline, missing from the current run",
                                              "t_benchmark.b_kept: 0.500 vs baseline 1.000 (tolerance 10%)")


def test_a_ratio_the_current_run_lacks_fails_the_gate(tmp_path: Path, keys: KeyPaths) -> None:
    baseline = _run(tmp_path / "b", keys, benches={"t": {"r": _ratio(1.0)}})
    for name, current in (("ratio", _run(tmp_path / "c1", keys, benches={"t": {}})),
                          ("artifact", _run(tmp_path / "c2", keys))):
        assert _gate(baseline, current, keys) == ("t_benchmark.r: in the baseline, missing from the current run",), name


def test_a_bench_artifact_that_does_not_verify_is_reported_beside_the_other_problems(tmp_path: Path,
                                                                                     keys: KeyPaths) -> None:
    baseline = _run(tmp_path / "b", keys, verdicts={"a": "PASS"}, benches={"t": {"r": _ratio(1.0)}})
    current = _run(tmp_path / "c", keys, verdicts={"a": "FAIL"}, benches={"t": {"r": _ratio(1.0)}})
    (current / ARTIFACTS / "t_benchmark.json.dsse.json").unlink()
    result = gate(baseline, current, baseline_key=keys.public, current_key=keys.public)
    assert result.rows_compared == 1 and len(result.problems) == 2
    assert result.problems[0] == "a: passed in the baseline, FAIL now"
    assert result.problems[1].startswith("benchmark signature: unreadable")


def test_the_identity_matrix_of_the_signed_run_is_gated(tmp_path: Path, keys: KeyPaths) -> None:
    baseline = _run(tmp_path / "b", keys, identity=GOOD_IDENTITY)
    assert _gate(baseline, _run(tmp_path / "same", keys, identity=GOOD_IDENTITY), keys) == ()
    failed = _run(tmp_path / "failed", keys, identity={**GOOD_IDENTITY, "failed": 1})
    assert _gate(baseline, failed, keys) == ("identity_conflict_matrix.json: 1 example(s) failed",)
    missing = _run(tmp_path / "missing", keys)
    assert _gate(baseline, missing, keys) == ("identity_conflict_matrix.json: in the baseline, missing now",)
    assert _gate(missing, failed, keys) == ("identity_conflict_matrix.json: 1 example(s) failed",)


def test_an_unsigned_identity_matrix_is_a_signature_failure(tmp_path: Path, keys: KeyPaths) -> None:
    baseline = _run(tmp_path / "b", keys, identity=GOOD_IDENTITY)
    current = _run(tmp_path / "c", keys, identity=GOOD_IDENTITY)
    (current / ARTIFACTS / "identity_conflict_matrix.json.dsse.json").unlink()
    (problem,) = _gate(baseline, current, keys)
    assert problem.startswith("signature: unreadable")


def test_identity_totals_without_the_optional_ratios_are_judged_on_what_they_state() -> None:
    bare = {"totals": {"examples": 3, "failed": 0}}
    assert identity_problems(bare, bare) == []
    assert identity_problems(None, {"totals": {"examples": 3, "failed": 0, "intent_conflict_ratio": 0.5}}) == [
        "identity_conflict_matrix.json: intent_conflict_ratio = 0.5"]
