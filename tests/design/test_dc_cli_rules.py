"""`delivery check-design-contract` exits 2 on every negative fixture: each file under
tests/fixtures/design/ and one mutated contract per validator rule, through the real CLI app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from dc_mutations import MUTATIONS, mutated
from typer.testing import CliRunner

from sink.cli import app

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "design").glob("*.yaml"))


def _check(path: Path) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(app, ["check-design-contract", str(path), "--format", "json"])
    assert "Traceback" not in result.output
    return result.exit_code, json.loads(result.stdout)


def test_bundled_contract_exits_0() -> None:
    result = CliRunner().invoke(app, ["check-design-contract", "--format", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["valid"] is True


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name for f in FIXTURES])
def test_every_fixture_file_exits_2(fixture: Path) -> None:
    code, report = _check(fixture)
    assert code == 2
    assert report["valid"] is False and report["findings"]


@pytest.mark.parametrize("rule", sorted(MUTATIONS))
def test_every_rule_mutation_exits_2_naming_its_rule(rule: str, tmp_path: Path) -> None:
    target = tmp_path / f"{rule}.yaml"
    target.write_text(yaml.safe_dump(mutated(rule), sort_keys=False), encoding="utf-8")
    code, report = _check(target)
    assert code == 2
    findings = report["findings"]
    assert isinstance(findings, list)
    assert rule in {finding["rule"] for finding in findings}
