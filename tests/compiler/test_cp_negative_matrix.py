"""Negative fixture matrix: every bad document is refused with its stable code(s) and exit 2.

Each fixture in tests/fixtures/compiler is a complete document that replaces one bundled
document (the part before ``__`` in its name says which). The expected codes are listed here,
not derived from the compiler, so a change of code is a visible test change.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cp_helpers import (
    ASYNC_PROFILE,
    ASYNC_WORKLOAD,
    ENVIRONMENT,
    FIXTURES,
    LOCAL_BINDING,
    REPO,
    SENTINEL,
    SYNC_PROFILE,
    SYNC_WORKLOAD,
    scenario_tree,
)
from typer.testing import CliRunner

from sink.cli import app
from sink.compiler import CONTRACT_CODES, CompileError, compile_files, default_paths

pytestmark = pytest.mark.timeout(60)

TARGETS = {
    "profile-async": (ASYNC_PROFILE, ASYNC_WORKLOAD),
    "profile-sync": (SYNC_PROFILE, SYNC_WORKLOAD),
    "binding": (LOCAL_BINDING, ASYNC_WORKLOAD),
    "workload": (ASYNC_WORKLOAD, ASYNC_WORKLOAD),
    "environment": (ENVIRONMENT, ASYNC_WORKLOAD),
}

EXPECTED: dict[str, set[str]] = {
    "profile-async__unknown_field": {"contract.unknown_field"},
    "profile-async__absolute_url": {"contract.absolute_url"},
    "profile-async__scheme_relative_url": {"contract.absolute_url"},
    "profile-async__path_traversal": {"contract.path_traversal"},
    "profile-async__encoded_traversal": {"contract.path_traversal"},
    "profile-async__control_character": {"contract.control_character"},
    "profile-async__bad_symbol_unknown": {"contract.bad_symbol"},
    "profile-async__bad_symbol_jinja": {"contract.bad_symbol"},
    "profile-async__bad_symbol_shell": {"contract.bad_symbol"},
    "profile-async__receipt_symbol_in_submit": {"contract.bad_symbol"},
    "profile-async__undeclared_receipt": {"contract.bad_symbol"},
    "profile-async__unsupported_family": {"contract.unsupported_family"},
    "profile-async__delete_method": {"contract.unsupported_method"},
    "profile-async__poll_not_get": {"contract.unsupported_method"},
    "profile-async__duplicate_key": {"yaml.duplicate_key"},
    "profile-async__two_payload_parts": {"contract.unknown_field"},
    "profile-async__unsupported_body": {"contract.unsupported_body"},
    "profile-async__vocabulary_overlap": {"contract.vocabulary_overlap"},
    "profile-async__timeout_inconsistent": {"contract.inconsistent_policy"},
    "profile-async__fence_not_in_filename": {"contract.fence_mismatch"},
    "profile-async__missing_poll": {"contract.unknown_field"},
    "profile-async__media_type_mismatch": {"contract.media_type_mismatch"},
    "profile-sync__forbidden_header": {"contract.forbidden_header"},
    "profile-sync__patch_without_fence": {"contract.unsupported_method"},
    "profile-sync__fence_header_mismatch": {"contract.fence_mismatch"},
    "profile-sync__absolute_url_in_query": {"contract.absolute_url"},
    "profile-sync__template_in_header": {"contract.bad_symbol"},
    "binding__secret_in_credential_ref": {"contract.plaintext_secret"},
    "binding__bearer_literal": {"contract.plaintext_secret"},
    "binding__secret_in_ref_query": {"contract.plaintext_secret"},
    "binding__userinfo_in_authority": {"contract.plaintext_secret"},
    "binding__http_without_local": {"contract.insecure_authority"},
    "binding__http_remote_host": {"contract.insecure_authority"},
    "binding__auth_none_without_local": {"contract.insecure_authority"},
    "binding__authority_with_path": {"contract.invalid_authority"},
    "binding__unknown_field": {"contract.unknown_field"},
    "binding__ftp_scheme": {"contract.insecure_authority"},
    "binding__digest_pin_mismatch": {"contract.digest_mismatch"},
    "workload__override_out_of_range": {"contract.override_out_of_range"},
    "workload__unknown_override": {"contract.unknown_field"},
    "workload__request_path_in_workload": {"contract.unknown_field"},
    "workload__unknown_profile": {"contract.unknown_reference"},
    "workload__unknown_connection": {"contract.unknown_reference"},
    "workload__traversal_in_ref": {"contract.path_traversal"},
    "workload__unsupported_mutation": {"contract.unsupported_mutation"},
    "workload__mutation_not_in_profile": {"contract.unsupported_mutation"},
    "workload__api_sink_type": {"contract.unsupported_sink"},
    "workload__yaml_syntax": {"yaml.syntax"},
    "environment__production_with_local_binding": {"contract.insecure_authority", "contract.uncertified_profile"},
    "environment__negative_revision": {"contract.invalid_value"},
}


def test_every_fixture_has_an_expectation_and_vice_versa() -> None:
    on_disk = {path.stem for path in FIXTURES.glob("*.yaml")}
    assert on_disk == set(EXPECTED)


def test_expected_codes_are_documented_catalog_codes() -> None:
    docs = (REPO / "docs" / "authoring.md").read_text(encoding="utf-8")
    for codes in EXPECTED.values():
        for code in codes:
            assert code in CONTRACT_CODES or code.startswith("yaml."), code
            assert f"`{code}`" in docs, f"{code} is not documented in docs/authoring.md"
    undocumented = {code for code in CONTRACT_CODES if f"`{code}`" not in docs}
    assert not undocumented


def _prepare(tmp_path: Path, case: str) -> Path:
    kind = case.split("__", 1)[0]
    target, workload = TARGETS[kind]
    root = scenario_tree(tmp_path)
    shutil.copyfile(FIXTURES / f"{case}.yaml", root / target)
    return root / workload


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_compiler_refuses_with_stable_code(tmp_path: Path, case: str) -> None:
    workload = _prepare(tmp_path, case)
    with pytest.raises(CompileError) as caught:
        compile_files(default_paths(workload))
    assert set(caught.value.codes) == EXPECTED[case]
    assert SENTINEL not in str(caught.value)
    assert all(SENTINEL not in d.message and SENTINEL not in d.location for d in caught.value.diagnostics)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_cli_check_exits_2_with_codes(tmp_path: Path, case: str) -> None:
    workload = _prepare(tmp_path, case)
    runner = CliRunner()
    text = runner.invoke(app, ["check", str(workload)])
    assert text.exit_code == 2, text.output
    for code in EXPECTED[case]:
        assert f"error[{code}]" in text.stderr
    assert "Traceback" not in text.output
    assert SENTINEL not in text.output

    as_json = runner.invoke(app, ["plan", str(workload), "--format", "json"])
    assert as_json.exit_code == 2
    report = json.loads(as_json.stdout)
    assert report["ok"] is False
    assert report["exit_code"] == 2
    assert {error["code"] for error in report["errors"]} == EXPECTED[case]
    assert SENTINEL not in as_json.output


@pytest.mark.parametrize("case", ["binding__secret_in_credential_ref", "profile-async__delete_method"])
def test_installed_entry_point_exits_2_without_traceback(tmp_path: Path, case: str) -> None:
    workload = _prepare(tmp_path, case)
    done = subprocess.run(
        [sys.executable, "-m", "sink.cli", "check", str(workload)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert SENTINEL not in done.stdout + done.stderr
    assert all(f"error[{code}]" in done.stderr for code in EXPECTED[case])


def test_every_code_raised_in_the_source_is_in_the_catalog() -> None:
    raised: set[str] = set()
    for package in ("sink/contracts", "sink/compiler"):
        for path in (REPO / package).glob("*.py"):
            raised.update(re.findall(r'"(contract\.[a-z_]+)"', path.read_text(encoding="utf-8")))
    assert raised, "the scan found no codes: the pattern is broken"
    assert raised <= CONTRACT_CODES, raised - CONTRACT_CODES
