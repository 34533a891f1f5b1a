"""CLI argument handling: scope options, formats, and the design-contract delegation."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Literal

import pytest
from cp_helpers import ASYNC_WORKLOAD, SCENARIOS
from typer.testing import CliRunner

from sink.cli import app

pytestmark = pytest.mark.timeout(60)
WORKLOAD = str(SCENARIOS / ASYNC_WORKLOAD)


@pytest.mark.parametrize(
    "arguments",
    [
        ["--scope-from", "2026-08-27"],
        ["--scope-from", "2026-13-01", "--scope-to", "2026-08-30"],
        ["--scope-from", "27.08.2026", "--scope-to", "2026-08-30"],
    ],
)
def test_bad_scope_arguments_exit_2_with_code(arguments: list[str]) -> None:
    result = CliRunner().invoke(app, ["plan", WORKLOAD, "--format", "json", *arguments])
    assert result.exit_code == 2
    assert [error["code"] for error in json.loads(result.stdout)["errors"]] == ["cli.invalid_argument"]


def test_reversed_scope_exits_2() -> None:
    result = CliRunner().invoke(app, ["plan", WORKLOAD, "--scope-from", "2026-08-30", "--scope-to", "2026-08-27"])
    assert result.exit_code == 2
    assert "error[contract.invalid_scope]" in result.stderr


def test_text_plan_lists_identities_and_limits() -> None:
    result = CliRunner().invoke(app, ["plan", WORKLOAD, "--scope-from", "2026-08-27", "--scope-to", "2026-08-30"])
    assert result.exit_code == 0, result.output
    for label in ("identities.operation_semantics_digest: sha256:", "limits.max_wire_bytes: 16000000",
                  "delivery.receiver_mutation_key: sha256:", "timeouts_ms.connect_ms: 3000"):
        assert label in result.stdout


def test_unknown_format_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["plan", WORKLOAD, "--format", "yaml"])
    assert result.exit_code == 2


def test_check_design_contract_delegates(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[tuple[Path | None, str]] = []

    def fake(path: Path | None, output_format: Literal["text", "json"]) -> int:
        calls.append((path, output_format))
        return 4

    module = types.ModuleType("sink.design.command")
    module.check_design_contract = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sink.design.command", module)
    target = tmp_path / "contract.yaml"
    result = CliRunner().invoke(app, ["check-design-contract", str(target), "--format", "json"])
    assert result.exit_code == 4
    assert calls == [(target, "json")]
    default = CliRunner().invoke(app, ["check-design-contract"])
    assert default.exit_code == 4
    assert calls[-1] == (None, "text")


def test_check_design_contract_runs_the_bundled_contract() -> None:
    result = CliRunner().invoke(app, ["check-design-contract", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["valid"] is True


def test_check_design_contract_without_the_component_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sink.design.command", None)  # makes the import raise ImportError
    result = CliRunner().invoke(app, ["check-design-contract"])
    assert result.exit_code == 3
    assert "error[cli.unavailable]" in result.stderr


def test_defaults_resolve_from_a_bare_workload_file_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SCENARIOS / "workloads")
    result = CliRunner().invoke(app, ["check", "measurements-async.yaml"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "arguments",
    [["--bogus"], ["--format", "yaml"], ["--correction-revision", "-1"], ["--correction-revision", "x"]],
)
def test_usage_errors_through_the_entry_point_are_json_when_asked(arguments: list[str]) -> None:
    wants_json = "yaml" not in arguments
    command = [sys.executable, "-m", "sink.cli", "plan", WORKLOAD, *arguments]
    if wants_json:
        command += ["--format", "json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "error[cli.usage]" in done.stderr
    assert "Traceback" not in done.stderr
    if wants_json:
        report = json.loads(done.stdout)
        assert report["ok"] is False
        assert [error["code"] for error in report["errors"]] == ["cli.usage"]
    else:
        assert done.stdout == ""
