"""The mutation gate itself (tools/mutation): its operators produce the mutants issue 14 names,
and the gate fails -- exit 1, the survivor named -- when the test that kills a mutant is left out
of a module pinned at 100 %. This is the CI step's failure shown by a test, not by hand."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "mutation"
sys.path.insert(0, str(TOOL))
from mutator import enumerate_mutants, mutated_source  # type: ignore[import-not-found]  # noqa: E402

SOURCE = '''
UNRESOLVED = frozenset({"UNKNOWN", "PARTIAL"})


def check(level: int, seen: list[int], state: str) -> int:
    """A docstring is never mutated."""
    if state in UNRESOLVED and level > 2:
        raise ValueError(f"refused {state}")
    return max(seen)
'''


def _keys() -> list[str]:
    return [m.key for m in enumerate_mutants("example.py", SOURCE)]


def test_the_operators_issue_14_names_are_generated() -> None:
    keys = _keys()
    expected = [
        "<module>: member-drop: {'UNKNOWN', 'PARTIAL'} -> {'PARTIAL'}",
        "<module>: member-drop: {'UNKNOWN', 'PARTIAL'} -> {'UNKNOWN'}",
        "check: compare: level > 2 -> level >= 2",
        "check: compare: state in UNRESOLVED -> state not in UNRESOLVED",
        "check: bool-drop: state in UNRESOLVED and level > 2 -> level > 2",
        "check: bool-drop: state in UNRESOLVED and level > 2 -> state in UNRESOLVED",
        "check: raise-drop: raise ValueError(f'refused {state}') -> pass",
        "check: builtin-swap: max(seen) -> min(seen)",
    ]
    missing = [k for k in expected if k not in keys]
    assert not missing, f"missing {missing}; generated {keys}"
    assert "check: constant: 2 -> 3" in keys and "<module>: string: 'UNKNOWN' -> 'XXUNKNOWNXX'" in keys
    # Not mutated: the docstring, the annotations, the raise's message.
    assert not [k for k in keys if "docstring" in k or ": int" in k or "XXrefused" in k]


def test_a_mutant_changes_exactly_its_one_node() -> None:
    mutants = enumerate_mutants("example.py", SOURCE)
    deleted = next(m for m in mutants if m.operator == "raise-drop")
    changed = mutated_source(SOURCE, deleted)
    assert "raise" not in changed and "pass" in changed
    assert "frozenset({'UNKNOWN', 'PARTIAL'})" in changed and "max(seen)" in changed
    keys = [m.key for m in mutants]
    assert len(keys) == len(set(keys)), "mutant keys must be unique: equivalents.toml refers to them"


# --- the gate: exit codes and the per-module threshold ---------------------------------------------

MODULE = "sink/journal/transition_policy.py"
MUTANT = "resolve_transition: bool-drop: transition.target.checkpoint_state is CheckpointState.PROMOTED and"
KILLER = "tests/journal/test_jn_policy_kills.py::test_a_transition_that_stays_promoted_is_not_a_promotion"
BYSTANDER = "tests/journal/test_jn_policy_kills.py::test_submit_from_planned_is_refused_by_state"


def _config(tmp_path: Path, tests: list[str], threshold: object = 1.0) -> Path:
    real = tomllib.loads((TOOL / "config.toml").read_text(encoding="utf-8"))
    args = ", ".join(f'"{a}"' for a in real["pytest_args"])
    listed = ", ".join(f'"{t}"' for t in tests)
    path = tmp_path / "config.toml"
    path.write_text(f'threshold = 0.9\npytest_args = [{args}]\n\n[modules."{MODULE}"]\n'
                    f'tests = [{listed}]\nselect = "not postgres"\nthreshold = {threshold}\n', encoding="utf-8")
    return path


def _gate(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL / "run.py"), "--config", str(config), "--module", MODULE, "--jobs", "1", *extra],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("threshold", ["1.5", "-0.1", '"all"'])
def test_a_module_threshold_outside_0_to_1_is_a_configuration_error(tmp_path: Path, threshold: str) -> None:
    result = _gate(_config(tmp_path, [KILLER], threshold), "--list")
    assert result.returncode == 2
    assert f"{MODULE}: threshold must be a number from 0 to 1" in result.stderr


def test_the_gate_fails_when_the_test_that_kills_a_mutant_is_removed(tmp_path: Path) -> None:
    kept = _gate(_config(tmp_path, [KILLER, BYSTANDER]), "--mutant", MUTANT)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "100.0%" in kept.stdout and "SURVIVED" not in kept.stdout

    removed = _gate(_config(tmp_path, [BYSTANDER]), "--mutant", MUTANT)
    assert removed.returncode == 1, removed.stdout + removed.stderr
    assert f"SURVIVED {MODULE}:" in removed.stdout and "BELOW" in removed.stdout
