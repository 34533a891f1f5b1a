"""Helpers shared by the compiler tests: a scratch copy of the bundled scenario tree."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
FIXTURES = REPO / "tests" / "fixtures" / "compiler"
AUTHORING_DIRS = ("profiles", "bindings", "workloads", "environments", "mappings")
SENTINEL = "SENTINEL-7f3a9c-LEAK-CANARY"

ASYNC_PROFILE = "profiles/mock.dataset-jobs@1.yaml"
SYNC_PROFILE = "profiles/mock.json-batches@1.yaml"
LOCAL_BINDING = "bindings/mock_measurements.yaml"
ASYNC_WORKLOAD = "workloads/measurements-async.yaml"
SYNC_WORKLOAD = "workloads/measurements-sync.yaml"
ENVIRONMENT = "environments/local.yaml"


def scenario_tree(tmp_path: Path, replacements: dict[str, str] | None = None) -> Path:
    """Copy the bundled authoring documents to ``tmp_path/scenarios`` and overwrite some of them."""
    root = tmp_path / "scenarios"
    for name in AUTHORING_DIRS:
        shutil.copytree(SCENARIOS / name, root / name)
    for relative, text in (replacements or {}).items():
        (root / relative).write_text(text, encoding="utf-8")
    return root


def edited(relative: str, old: str, new: str) -> str:
    """The bundled document ``relative`` with exactly one occurrence of ``old`` replaced."""
    text = (SCENARIOS / relative).read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} must occur exactly once in {relative}"
    return text.replace(old, new)
