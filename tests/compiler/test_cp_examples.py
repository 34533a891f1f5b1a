"""The bundled examples compile, their identities are complete and stable across runs and
processes, and the compiled plan round-trips and verifies its own digest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from cp_helpers import ASYNC_WORKLOAD, REPO, SCENARIOS, SYNC_WORKLOAD
from pydantic import ValidationError
from typer.testing import CliRunner

from sink.cli import app
from sink.compiler import compile_files, default_paths, delivery_identity, plan_digest_matches
from sink.contracts import PLAN_SCHEMA_ID, CompiledPlan
from sink.identity import is_digest

pytestmark = pytest.mark.timeout(120)

WORKLOADS = [ASYNC_WORKLOAD, SYNC_WORKLOAD, "workloads/measurements-reference.yaml"]


def _plan(relative: str) -> CompiledPlan:
    return compile_files(default_paths(SCENARIOS / relative))


@pytest.mark.parametrize("relative", WORKLOADS)
def test_bundled_workloads_compile_with_every_identity(relative: str) -> None:
    plan = _plan(relative)
    assert plan.schema_id == PLAN_SCHEMA_ID
    digests = plan.digests.model_dump()
    assert set(digests) == {
        "operation_namespace", "receiver_binding_semantics_digest", "operation_semantics_digest",
        "execution_policy_digest", "profile_contract_digest", "effect_conflict_domain",
    }
    assert all(is_digest(value) for value in digests.values())
    assert len(set(digests.values())) == len(digests), "distinct purposes must give distinct digests"
    assert is_digest(plan.compiled_plan_digest)
    assert plan_digest_matches(plan)


def test_examples_share_semantics_where_they_share_a_profile() -> None:
    local_async, reference_async, sync = (_plan(w) for w in (ASYNC_WORKLOAD, WORKLOADS[2], SYNC_WORKLOAD))
    assert local_async.digests.operation_semantics_digest == reference_async.digests.operation_semantics_digest
    assert local_async.digests.receiver_binding_semantics_digest != (
        reference_async.digests.receiver_binding_semantics_digest
    )
    assert local_async.digests.operation_semantics_digest != sync.digests.operation_semantics_digest
    # Both mock profiles share the effect conflict group, resource and remote principal: one domain.
    assert local_async.digests.effect_conflict_domain == sync.digests.effect_conflict_domain


def test_compilation_is_deterministic_within_a_process() -> None:
    first, second = _plan(ASYNC_WORKLOAD), _plan(ASYNC_WORKLOAD)
    assert first == second
    assert first.model_dump_json() == second.model_dump_json()


def test_plan_round_trips_and_detects_tampering() -> None:
    plan = _plan(ASYNC_WORKLOAD)
    restored = CompiledPlan.model_validate_json(plan.model_dump_json())
    assert restored == plan
    assert plan_digest_matches(restored)
    swapped = plan.model_copy(
        update={"binding": plan.binding.model_copy(update={"remote_principal_id": "someone-else"})}
    )
    assert not plan_digest_matches(swapped)


def test_plan_schema_is_pinned_and_closed() -> None:
    document = json.loads(_plan(ASYNC_WORKLOAD).model_dump_json())
    with pytest.raises(ValidationError):
        CompiledPlan.model_validate({**document, "schema_id": "restproof.rest_delivery_plan.v2"})
    with pytest.raises(ValidationError):
        CompiledPlan.model_validate({**document, "unexpected": 1})


def _plan_json_in_subprocess(hash_seed: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-m", "sink.cli", "plan", ASYNC_WORKLOAD.join(["scenarios/", ""]), "--format", "json",
         "--scope-from", "2026-08-27", "--scope-to", "2026-08-30"],
        capture_output=True, text=True, timeout=60, check=True, cwd=REPO, env=env,
    )
    document: dict[str, object] = json.loads(done.stdout)
    return document


def test_plan_output_is_stable_across_processes_and_hash_seeds() -> None:
    first = _plan_json_in_subprocess("0")
    second = _plan_json_in_subprocess("4242")
    assert first == second
    in_process = CliRunner().invoke(
        app, ["plan", str(SCENARIOS / ASYNC_WORKLOAD), "--format", "json",
              "--scope-from", "2026-08-27", "--scope-to", "2026-08-30"],
    )
    assert json.loads(in_process.stdout) == first
    delivery = first["delivery"]
    assert isinstance(delivery, dict)
    assert is_digest(delivery["delivery_key"]) and is_digest(delivery["receiver_mutation_key"])


def test_readme_main_job_commands_succeed_from_the_repo_root() -> None:
    check = subprocess.run([sys.executable, "-m", "sink.cli", "check", "scenarios/workloads/measurements-async.yaml"],
                           capture_output=True, text=True, timeout=60, check=False, cwd=REPO)
    assert check.returncode == 0, check.stderr
    plan = _plan_json_in_subprocess("1")
    assert plan["ok"] is True
    assert plan["plan_schema_id"] == PLAN_SCHEMA_ID


def test_plan_view_is_redacted() -> None:
    result = CliRunner().invoke(app, ["plan", str(SCENARIOS / ASYNC_WORKLOAD), "--format", "json"])
    assert result.exit_code == 0
    assert "MOCK_RECEIVER_TOKEN" not in result.stdout  # only the locator's scheme is shown
    assert json.loads(result.stdout)["binding"]["credential_ref_scheme"] == "env"


def test_delivery_identity_for_an_interval() -> None:
    plan = _plan(ASYNC_WORKLOAD)
    identity = delivery_identity(plan, date(2026, 8, 27), date(2026, 8, 30))
    assert identity.scheduled_interval_end_utc == "2026-08-30T00:00:00Z"
    assert identity.target_effect_scope.days == 3
    assert identity.operation_namespace == plan.digests.operation_namespace
    assert identity == delivery_identity(plan, date(2026, 8, 27), date(2026, 8, 30))
    shifted = delivery_identity(plan, date(2026, 8, 28), date(2026, 8, 30))
    assert shifted.delivery_key != identity.delivery_key
    corrected = delivery_identity(plan, date(2026, 8, 27), date(2026, 8, 30), correction_revision=1)
    assert corrected.delivery_key != identity.delivery_key
    assert corrected.receiver_mutation_key != identity.receiver_mutation_key


def test_workload_file_paths_can_be_given_explicitly(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [
        "check", str(SCENARIOS / ASYNC_WORKLOAD),
        "--profiles-dir", str(SCENARIOS / "profiles"), "--bindings-dir", str(SCENARIOS / "bindings"),
        "--environment", str(SCENARIOS / "environments" / "local.yaml"), "--format", "json",
    ])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["profile"] == "mock.dataset-jobs@1"
    missing = CliRunner().invoke(app, ["check", str(SCENARIOS / ASYNC_WORKLOAD),
                                       "--environment", str(tmp_path / "absent.yaml")])
    assert missing.exit_code == 2
    assert "error[yaml.unreadable]" in missing.stderr
