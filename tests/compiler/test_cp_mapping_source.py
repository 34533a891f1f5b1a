"""Mappings and sources: resolved by mapping_ref, pinned into the plan, refused with stable codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sink.compiler import CompileError, compile_files, default_paths
from tests.compiler.cp_helpers import ASYNC_PROFILE, ASYNC_WORKLOAD, REPO, SCENARIOS, edited, scenario_tree

MAPPING = "mappings/mock.measurements.v1.yaml"
AMBIGUOUS_FIELD = "  - {name: label, type: string, nullable: true, empty_string: as_null}"
KEEPS_BOTH = "  - {name: label, type: string, nullable: true, empty_string: preserve}"
FILENAME = 'filename: "{receiver_mutation_key}.csv.gz"'


def _compile(root: Path, workload: str = ASYNC_WORKLOAD):  # type: ignore[no-untyped-def]
    return compile_files(default_paths(root / workload))


def _codes(root: Path) -> set[str]:
    with pytest.raises(CompileError) as caught:
        _compile(root)
    return set(caught.value.codes)


def test_bundled_workloads_pin_their_mapping_and_source() -> None:
    for workload in sorted((SCENARIOS / "workloads").glob("*.yaml")):
        plan = compile_files(default_paths(workload))
        assert plan.mapping is not None and plan.mapping.id == plan.workload.mapping_ref
        assert plan.workload.source is not None


def test_a_mapping_change_moves_the_plan_digest(tmp_path: Path) -> None:
    before = _compile(scenario_tree(tmp_path / "a")).compiled_plan_digest
    changed = edited(MAPPING, "scale: 3", "scale: 4")
    after = _compile(scenario_tree(tmp_path / "b", {MAPPING: changed})).compiled_plan_digest
    assert before != after


def test_missing_mapping_file_is_an_unknown_reference(tmp_path: Path) -> None:
    root = scenario_tree(tmp_path)
    (root / MAPPING).unlink()
    assert _codes(root) == {"contract.unknown_reference"}


def test_unknown_mapping_field_is_refused(tmp_path: Path) -> None:
    text = edited(MAPPING, "scope_field: business_date", "scope_field: business_date\nsort_by: [station_id]")
    assert _codes(scenario_tree(tmp_path, {MAPPING: text})) == {"contract.unknown_field"}


def test_null_and_empty_kept_apart_compile_with_a_quoted_empty_dialect(tmp_path: Path) -> None:
    mapping = edited(MAPPING, AMBIGUOUS_FIELD, KEEPS_BOTH)
    profile = edited(ASYNC_PROFILE, FILENAME, FILENAME + '\n      csv_dialect: {null_text: "", empty_string: quoted}')
    plan = _compile(scenario_tree(tmp_path, {MAPPING: mapping, ASYNC_PROFILE: profile}))
    assert plan.mapping is not None


def test_ambiguous_null_and_empty_fail_at_compile(tmp_path: Path) -> None:
    mapping = edited(MAPPING, AMBIGUOUS_FIELD, KEEPS_BOTH)
    profile = edited(ASYNC_PROFILE, FILENAME, FILENAME + '\n      csv_dialect: {null_text: "", empty_string: unquoted}')
    assert _codes(scenario_tree(tmp_path, {MAPPING: mapping, ASYNC_PROFILE: profile})) == {"contract.ambiguous_null"}


def test_empty_as_null_needs_a_nullable_field(tmp_path: Path) -> None:
    mapping = edited(MAPPING, AMBIGUOUS_FIELD, "  - {name: label, type: string, empty_string: as_null}")
    assert _codes(scenario_tree(tmp_path, {MAPPING: mapping})) == {"contract.ambiguous_null"}


def test_scope_field_must_be_the_workloads_scope_source(tmp_path: Path) -> None:
    workload = edited(ASYNC_WORKLOAD, "source_field: business_date", "source_field: observed_on")
    assert _codes(scenario_tree(tmp_path, {ASYNC_WORKLOAD: workload})) == {"contract.scope_field_mismatch"}


def test_scope_field_must_be_a_date(tmp_path: Path) -> None:
    mapping = edited(MAPPING, "scope_field: business_date", "scope_field: station_id")
    assert _codes(scenario_tree(tmp_path, {MAPPING: mapping})) == {"contract.invalid_scope_field"}


def test_unknown_source_type_is_refused(tmp_path: Path) -> None:
    workload = edited(ASYNC_WORKLOAD, "type: csv_file", "type: s3_bucket")
    assert _codes(scenario_tree(tmp_path, {ASYNC_WORKLOAD: workload})) == {"contract.unsupported_source"}


def test_a_query_with_two_statements_is_refused(tmp_path: Path) -> None:
    workload = edited(ASYNC_WORKLOAD, "type: csv_file\n  path: data/measurements.csv",
                      "type: sqlite_query\n  path: m.db\n  query: 'select 1; drop table m'")
    assert _codes(scenario_tree(tmp_path, {ASYNC_WORKLOAD: workload})) == {"contract.invalid_value"}


def test_check_on_a_fifo_fails_fast_instead_of_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "workload.yaml"
    os.mkfifo(fifo)
    command = [sys.executable, "-m", "sink.cli", "check", str(fifo)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60, cwd=REPO)
    assert done.returncode == 2
    assert "yaml.unreadable" in done.stderr
