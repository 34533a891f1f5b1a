"""Exported JSON Schemas are valid Draft 2020-12, closed everywhere, and accept the bundled examples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from sink.bounded_yaml import load_bounded_yaml_file
from sink.cli import app
from sink.contracts.schemas import DOCUMENT_MODELS, document_schema

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
EXAMPLES = {
    "workload": sorted((SCENARIOS / "workloads").glob("*.yaml")),
    "profile": sorted((SCENARIOS / "profiles").glob("*.yaml")),
    "binding": sorted((SCENARIOS / "bindings").glob("*.yaml")),
    "environment": sorted((SCENARIOS / "environments").glob("*.yaml")),
}


def _objects(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if "properties" in node:
            found.append(node)
        for value in node.values():
            found.extend(_objects(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_objects(value))
    return found


@pytest.mark.parametrize("kind", sorted(DOCUMENT_MODELS))
def test_schema_is_valid_and_closed(kind: str) -> None:
    schema = document_schema(kind)
    Draft202012Validator.check_schema(schema)
    objects = _objects(schema)
    assert objects
    assert all(obj.get("additionalProperties") is False for obj in objects)


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_bundled_examples_satisfy_their_schema(kind: str) -> None:
    validator = Draft202012Validator(document_schema(kind))
    assert EXAMPLES[kind]
    for path in EXAMPLES[kind]:
        document = load_bounded_yaml_file(path)
        assert not list(validator.iter_errors(document)), path
        assert list(validator.iter_errors({**document, "unexpected_key": 1})), "the schema must be closed"


def test_cli_prints_the_schema() -> None:
    result = CliRunner().invoke(app, ["schema", "profile"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == document_schema("profile")
    assert CliRunner().invoke(app, ["schema", "nothing"]).exit_code == 2
