"""certify run on hostile input files: every case is a stable exit 2 with one error line, never a
traceback or an internal error, and nothing runs (no receiver, proxy or sink is started)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

MATRIX = Path(__file__).resolve().parents[2] / "scenarios" / "matrix"
CERTIFY = str(Path(sys.executable).with_name("certify"))


def _catalog(tmp_path: Path, name: str, replace: tuple[str, str] | None = None) -> Path:
    text = (MATRIX / "sync-json-batches.yaml").read_text().replace("../", f"{MATRIX.parent}/")
    if replace is not None:
        assert replace[0] in text
        text = text.replace(*replace)
    path = tmp_path / name
    path.write_text(text)
    return path


def _certify(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CERTIFY, "run", *args, "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=120, check=False)


def _cases(tmp_path: Path) -> dict[str, list[str]]:
    garbage = tmp_path / "garbage.yaml"
    garbage.write_bytes(b"\x00\x01 not yaml")
    nul_sink = tmp_path / "nul-sink.yaml"
    nul_sink.write_text('schema_id: restproof.sink_under_test.v2\nname: nul\nrole: certified\ndescription: x\n'
                        'run: ["a\\0b"]\n')
    v1_sink = tmp_path / "v1-sink.yaml"
    v1_sink.write_text("schema_id: restproof.sink_under_test.v1\nname: old\ndescription: x\nrun: [a]\n")
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    second_certified = tmp_path / "second.yaml"
    second_certified.write_text("schema_id: restproof.sink_under_test.v2\nname: second\nrole: certified\n"
                                "description: x\nrun: [a]\n")
    return {
        "a calendar-impossible scope": ["--catalog", str(_catalog(tmp_path, "scope.yaml", (
            'scope: {from: "2026-03-01"', 'scope: {from: "2026-13-45"')))],
        "a reversed scope": ["--catalog", str(_catalog(tmp_path, "reversed.yaml", (
            'scope: {from: "2026-03-01", to: "2026-03-05"}', 'scope: {from: "2026-03-05", to: "2026-03-01"}')))],
        "a workload that is not YAML": ["--catalog", str(_catalog(tmp_path, "workload.yaml", (
            "workload: ../workloads/measurements-sync.yaml".replace("../", f"{MATRIX.parent}/"),
            f"workload: {garbage}")))],
        "a NUL in a run argument": ["--sink", str(nul_sink)],
        "a v1 sink without a role": ["--sink", str(v1_sink)],
        "a second certified sink": ["--sink", "reference", "--sink", str(second_certified)],
        "a catalog nested 5,000 deep": ["--catalog", str(deep)],
        "the same row id in two catalogs": ["--catalog", str(_catalog(tmp_path, "a.yaml")),
                                            "--catalog", str(_catalog(tmp_path, "b.yaml"))],
        "an unknown row": ["--only", "sync.no-such-row"],
        "a missing sink file": ["--sink", str(tmp_path / "absent.yaml")],
    }


CASES = ["a calendar-impossible scope", "a reversed scope", "a workload that is not YAML", "a NUL in a run argument",
         "a v1 sink without a role", "a second certified sink", "a catalog nested 5,000 deep",
         "the same row id in two catalogs", "an unknown row", "a missing sink file"]


@pytest.mark.parametrize("case", CASES)
def test_hostile_input_is_exit_2_with_one_error_line(tmp_path: Path, case: str) -> None:
    result = _certify(tmp_path, *_cases(tmp_path)[case])
    assert result.returncode == 2, (case, result.returncode, result.stderr[-500:])
    assert result.stderr.startswith("error[certify."), result.stderr[:300]
    assert "Traceback" not in result.stderr + result.stdout
    assert "internal error" not in result.stderr
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written
