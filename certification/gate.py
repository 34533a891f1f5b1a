"""``certify gate``: a regression gate over two signed runs (the committed baseline and the current).

Both runs' matrix and summary must verify (signature over the exact bytes, content digest). Then
it fails, with the full list, on: any safety counter above zero for the certified sink, any row
that passed in the baseline and does not pass now, any baseline row missing now, an invalid run
(a baseline sink that had to be caught duplicating was not), and any benchmark ratio worse than
the baseline beyond its stated tolerance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from certification.verify import VerificationFailed, verify_artifact

ARTIFACTS = Path("test_artifacts") / "connectors" / "rest"
SAFETY = ("duplicates", "false_successes", "unproved_resends", "silent_losses")


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


def gate(baseline: Path, current: Path, *, baseline_key: Path, current_key: Path) -> GateResult:
    problems: list[str] = []
    try:
        base_matrix = _load(baseline, "remote_effect_fault_matrix.json", baseline_key)
        base_summary = _load(baseline, "certification_summary.json", baseline_key)
        cur_matrix = _load(current, "remote_effect_fault_matrix.json", current_key)
        cur_summary = _load(current, "certification_summary.json", current_key)
    except VerificationFailed as exc:
        return GateResult((f"signature: {exc}",), 0)
    certified = str(cur_summary["certified_sink"])
    totals = cur_summary["totals"].get(certified, {})
    problems.extend(f"{certified}: {name} = {totals[name]}" for name in SAFETY if totals.get(name))
    if not cur_summary.get("valid", False):
        problems.append("the current run is invalid: " + ", ".join(cur_summary.get("baseline_not_caught", [])))
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
            continue
        now_value = cur_ratios[name][0]
        worse = now_value < value * (1 - tolerance) if better == "higher" else now_value > value * (1 + tolerance)
        if worse:
            problems.append(f"{name}: {now_value:.3f} vs baseline {value:.3f} (tolerance {tolerance:.0%})")
    return GateResult(tuple(problems), compared)
