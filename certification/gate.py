"""``certify gate``: a regression gate over two signed runs (the committed baseline and the current).

Both runs' matrix and summary must verify (signature over the exact bytes, content digest) against
keys the caller pins: the current run's key is never taken from inside the run, so a run re-signed
with a new key does not pass. Then it fails, with the full list, on: a current run whose own signed
summary does not say PASS, any safety counter above zero for the certified sink, any row that passed
in the baseline and does not pass now, any baseline row missing now, an invalid run (a baseline sink
that had to be caught duplicating was not), any benchmark ratio worse than the baseline beyond its
stated tolerance, and any baseline ratio the current run does not have.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from certification.airflow.evidence import gate_problems as airflow_gate_problems
from certification.verify import VerificationFailed, verify_artifact

ARTIFACTS = Path("test_artifacts") / "connectors" / "rest"
IDENTITY = "identity_conflict_matrix.json"
SAFETY = ("duplicates", "false_successes", "unproved_resends", "silent_losses", "out_of_scope", "wrong_content",
          "checkpoint_gaps")


@dataclass(frozen=True, slots=True)
class GateResult:
    problems: tuple[str, ...]
    rows_compared: int

    @property
    def passed(self) -> bool:
        return not self.problems


def _load(run: Path, name: str, key: Path) -> dict[str, Any]:
    path = run / ARTIFACTS / name
    verify_artifact(path, key)
    document: dict[str, Any] = json.loads(path.read_bytes())
    return document


def _bench_ratios(run: Path, key: Path) -> dict[str, tuple[float, float, str]]:
    """figure -> (ratio, tolerance, direction) from every signed bench artifact of a run."""
    ratios: dict[str, tuple[float, float, str]] = {}
    for path in sorted((run / ARTIFACTS).glob("*_benchmark.json")):
        verify_artifact(path, key)
        document = json.loads(path.read_bytes())
        for name, figure in document.get("ratios", {}).items():
            ratios[f"{path.stem}.{name}"] = (float(figure["value"]), float(figure.get("tolerance", 0.1)),
                                             str(figure.get("better", "higher")))
    return ratios


def _identity(run: Path, key: Path) -> dict[str, Any] | None:
    path = run / ARTIFACTS / IDENTITY
    if not path.exists():
        return None
    verify_artifact(path, key)
    document: dict[str, Any] = json.loads(path.read_bytes())
    return document


def identity_problems(baseline: dict[str, Any] | None, current: dict[str, Any] | None) -> list[str]:
    """The identity conflict matrix must be present where the baseline had one, and perfect."""
    if current is None:
        return [f"{IDENTITY}: in the baseline, missing now"] if baseline is not None else []
    totals = current["totals"]
    problems = []
    if totals.get("failed"):
        problems.append(f"{IDENTITY}: {totals['failed']} example(s) failed")
    if totals.get("network_connections_before_conflict"):
        problems.append(f"{IDENTITY}: {totals['network_connections_before_conflict']} network connection(s) "
                        "before the conflict")
    for name in ("intent_conflict_ratio", "identity_identical_ratio"):
        if totals.get(name) is not None and totals[name] < 1:
            problems.append(f"{IDENTITY}: {name} = {totals[name]}")
    if not totals.get("examples"):
        problems.append(f"{IDENTITY}: no examples")
    return problems


def gate(baseline: Path, current: Path, *, baseline_key: Path, current_key: Path) -> GateResult:
    problems: list[str] = []
    try:
        base_matrix = _load(baseline, "remote_effect_fault_matrix.json", baseline_key)
        base_summary = _load(baseline, "certification_summary.json", baseline_key)
        cur_matrix = _load(current, "remote_effect_fault_matrix.json", current_key)
        cur_summary = _load(current, "certification_summary.json", current_key)
        base_identity, cur_identity = _identity(baseline, baseline_key), _identity(current, current_key)
    except VerificationFailed as exc:
        return GateResult((f"signature: {exc}",), 0)
    problems.extend(identity_problems(base_identity, cur_identity))
    problems.extend(airflow_gate_problems(baseline, current, baseline_key=baseline_key, current_key=current_key))
    certified = str(cur_summary["certified_sink"])
    totals = cur_summary["totals"].get(certified, {})
    problems.extend(f"{certified}: {name} = {totals[name]}" for name in SAFETY if totals.get(name))
    if not cur_summary.get("valid", False):
        problems.append("the current run is invalid: " + ", ".join(cur_summary.get("baseline_not_caught", [])))
    if cur_summary.get("verdict") != "PASS":
        problems.append(f"the current run's own signed verdict is {cur_summary.get('verdict')}, not PASS")
    current_rows = {row["row_id"]: row for row in cur_matrix["rows"]}
    compared = 0
    for row in base_matrix["rows"]:
        row_id = row["row_id"]
        now = current_rows.get(row_id)
        if now is None:
            problems.append(f"{row_id}: in the baseline, missing now")
            continue
        compared += 1
        before = row["sinks"].get(base_summary["certified_sink"], {}).get("verdict")
        after = now["sinks"].get(certified, {}).get("verdict")
        if before == "PASS" and after != "PASS":
            problems.append(f"{row_id}: passed in the baseline, {after} now")
    try:
        base_ratios, cur_ratios = _bench_ratios(baseline, baseline_key), _bench_ratios(current, current_key)
    except VerificationFailed as exc:
        problems.append(f"benchmark signature: {exc}")
        base_ratios, cur_ratios = {}, {}
    for name, (value, tolerance, better) in base_ratios.items():
        if name not in cur_ratios:
            problems.append(f"{name}: in the baseline, missing from the current run")
            continue
        now_value = cur_ratios[name][0]
        worse = now_value < value * (1 - tolerance) if better == "higher" else now_value > value * (1 + tolerance)
        if worse:
            problems.append(f"{name}: {now_value:.3f} vs baseline {value:.3f} (tolerance {tolerance:.0%})")
    return GateResult(tuple(problems), compared)
