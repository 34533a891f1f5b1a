"""Reading ``airflow_async_acceptance.json`` back: the closed shape the report shows and the gate's
problems with it. The artifact is hostile input like every other: size-bounded by the verifier,
parsed into a pydantic shape that ignores unknown fields and allows finite numbers only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from certification.verify import VerificationFailed, verify_artifact

ARTIFACT = "airflow_async_acceptance.json"
ARTIFACTS = Path("test_artifacts") / "connectors" / "rest"
"""Where a run keeps its artifacts (``certification.gate.ARTIFACTS``; the gate imports this module)."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)


class AirflowRow(_Open):
    id: str = Field(max_length=200)
    passed: bool | None = None
    error: str = Field(default="", max_length=2000)
    checks: dict[str, bool] = {}
    submissions: int | None = None
    effects: int | None = None
    duplicate_effects: int | None = None
    posts_at_proxy: int | None = None
    worker_time: dict[str, float | int | bool | str | None] = {}


class AirflowAcceptance(_Open):
    verdict: str = Field(max_length=32)
    valid: bool
    quick: bool = False
    environment: dict[str, Any] = {}
    figures: dict[str, float | int | bool | None] = {}
    scenarios: list[AirflowRow]
    baselines: list[AirflowRow] = []
    sentinel_scan: dict[str, Any] = {}

    @property
    def airflow_version(self) -> str:
        return str(self.environment.get("airflow_version", "?"))[:32]


def load_acceptance(path: Path) -> AirflowAcceptance:
    """Parse an (already verified) artifact; ValueError names the first problem."""
    try:
        return AirflowAcceptance.model_validate(json.loads(path.read_bytes()))
    except (OSError, ValueError, ValidationError) as exc:
        raise ValueError(f"{path.name}: {type(exc).__name__}") from None


def gate_problems(baseline: Path, current: Path, *, baseline_key: Path, current_key: Path) -> list[str]:
    """The Airflow acceptance must be present where the baseline had one, verify, and pass; no
    scenario that passed in the baseline may fail or vanish now."""
    base_path, cur_path = baseline / ARTIFACTS / ARTIFACT, current / ARTIFACTS / ARTIFACT
    if not cur_path.exists():
        return [f"{ARTIFACT}: in the baseline, missing now"] if base_path.exists() else []
    try:
        verify_artifact(cur_path, current_key)
        current_doc = load_acceptance(cur_path)
    except (VerificationFailed, ValueError) as exc:
        return [f"{ARTIFACT}: {exc}"]
    problems = []
    if current_doc.verdict != "PASS":
        problems.append(f"{ARTIFACT}: verdict {current_doc.verdict} on Airflow {current_doc.airflow_version}")
    problems.extend(f"{ARTIFACT}: {row.id} failed" for row in current_doc.scenarios if not row.passed)
    if current_doc.sentinel_scan.get("passed") is not True:
        problems.append(f"{ARTIFACT}: a sentinel leaked")
    if base_path.exists():
        try:
            verify_artifact(base_path, baseline_key)
            base_doc = load_acceptance(base_path)
        except (VerificationFailed, ValueError) as exc:
            return [*problems, f"baseline {ARTIFACT}: {exc}"]
        now = {row.id: row for row in current_doc.scenarios}
        for row in base_doc.scenarios:
            if row.passed and row.id not in now:
                problems.append(f"{ARTIFACT}: {row.id} passed in the baseline, missing now")
    return problems
