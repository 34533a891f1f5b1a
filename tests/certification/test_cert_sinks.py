"""Sinks under test: the sink file (schema v2, an explicit role, plain arguments), the sink's claims
per day read from its declared result -- judged, never trusted, and never a crash of the harness
on a hostile result -- and the launcher that holds a sink until its fault is armed."""

from __future__ import annotations

import json
import sys
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from certification.sinks import (
    MAX_CLAIMED_DAYS,
    SINK_SCHEMA,
    Invocation,
    Launched,
    SinkFileError,
    SinkSpec,
    blocked_children,
    bundled_sinks,
    checkpoint_claim,
    load_sink,
    render,
    stated_codes,
    unit_claims,
)

MINIMAL: dict[str, Any] = {"schema_id": SINK_SCHEMA, "name": "mine", "role": "certified", "description": "d",
                           "run": ["{python}", "-m", "my_sink"]}


def sink_file(tmp_path: Path, **changes: Any) -> Path:
    document = {key: value for key, value in {**MINIMAL, **changes}.items() if value is not None}
    path = tmp_path / "sink.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    return path


def spec(result: str) -> SinkSpec:
    return SinkSpec.model_validate({**MINIMAL, "result": result})


# --- the sink file --------------------------------------------------------------------------------------------


def test_a_sink_file_is_read_with_its_directory(tmp_path: Path) -> None:
    loaded = load_sink(sink_file(tmp_path))
    assert loaded.name == "mine" and loaded.role == "certified" and loaded.run == ("{python}", "-m", "my_sink")
    assert loaded.base_dir == tmp_path.resolve() and loaded.result == "none" and not loaded.failpoints
    assert loaded.recover is None and loaded.operator is None


def test_the_bundled_sinks_state_their_roles() -> None:
    sinks = bundled_sinks()
    assert {name: spec.role for name, spec in sinks.items()} == {
        "reference": "certified", "naive-retry": "baseline", "naive-idempotency-key": "baseline"}
    assert sinks["reference"].failpoints and sinks["reference"].result == "reference_json"


def test_a_v1_sink_file_is_refused_with_the_way_forward(tmp_path: Path) -> None:
    with pytest.raises(SinkFileError, match=r"schema restproof\.sink_under_test\.v1 has no explicit role; write "
                                            r"schema_id restproof\.sink_under_test\.v2 with role: "
                                            r"certified \| baseline"):
        load_sink(sink_file(tmp_path, schema_id="restproof.sink_under_test.v1"))


@pytest.mark.parametrize(("changes", "where"), [
    ({"role": None}, "role"),
    ({"role": "naive"}, "role"),
    ({"name": "Naive Retry"}, "name"),
    ({"run": []}, "run"),
    ({"run": ["a\x00b"]}, "run"),
    ({"recover": ["ok", "x" * 4097]}, "recover"),
    ({"operator": ["\x00"]}, "operator"),
    ({"result": "prose"}, "result"),
    ({"shell": "rm -rf /"}, "shell"),
    ({"description": "d" * 301}, "description"),
])
def test_sink_files_it_refuses(tmp_path: Path, changes: dict[str, Any], where: str) -> None:
    with pytest.raises(SinkFileError, match=rf"not a sink file \({where}"):
        load_sink(sink_file(tmp_path, **changes))


def test_an_argument_of_4096_characters_is_fine(tmp_path: Path) -> None:
    assert load_sink(sink_file(tmp_path, run=["x" * 4096])).run == ("x" * 4096,)


def test_a_nul_in_the_yaml_text_itself_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sink.yaml"
    path.write_bytes(yaml.safe_dump(MINIMAL).encode() + b"\x00")
    with pytest.raises(SinkFileError, match="holds a NUL character"):
        load_sink(path)


def test_a_role_is_never_taken_from_a_name(tmp_path: Path) -> None:
    assert load_sink(sink_file(tmp_path, name="naive-but-certified")).role == "certified"
    assert load_sink(sink_file(tmp_path, name="reference", role="baseline")).role == "baseline"


def test_render_fills_every_placeholder_and_nothing_else() -> None:
    assert render(("{python}", "--x={state_dir}/{unknown}", "{{python}}"), {"python": "/p", "state_dir": "/s"}) == (
        "/p", "--x=/s/{unknown}", "{/p}")


# --- claims ---------------------------------------------------------------------------------------------------


def _units(*units: Any) -> str:
    return json.dumps({"units": list(units)})


def test_units_claim_every_day_of_their_scope() -> None:
    stdout = "progress line\n" + _units(
        {"scope_from": "2026-03-01", "scope_to": "2026-03-03", "status": "completed"},
        {"scope_from": "2026-03-03T00:00:00Z", "scope_to": "2026-03-04T00:00:00Z", "status": "failed"},
        {"scope_from": "2026-03-04", "scope_to": "2026-03-05", "status": "weird"})
    assert unit_claims(spec("units_json"), stdout) == ({"2026-03-01": "completed", "2026-03-02": "completed",
                                                        "2026-03-03": "failed", "2026-03-04": "failed"}, None)


def test_a_units_scope_that_is_no_range_claims_nothing() -> None:
    stdout = _units({"scope_from": "someday", "scope_to": "2026-03-02", "status": "completed"},
                    {"status": "completed"}, {"scope_from": 5, "scope_to": None, "status": "completed"})
    assert unit_claims(spec("units_json"), stdout) == ({}, None)


def _child(status: str, effect: str, start: str = "2026-03-01T00:00:00Z", end: str = "2026-03-02T00:00:00Z",
           **extra: Any) -> dict[str, Any]:
    return {"status": status, "axes": {"remote_effect": effect}, "scope": {"start": start, "end": end},
            "operation_id": "op-1", **extra}


@pytest.mark.parametrize(("child", "outcome"), [
    (_child("completed", "FULLY_APPLIED"), "completed"),
    (_child("blocked", "UNKNOWN"), "unknown"),
    (_child("blocked", "PARTIALLY_APPLIED"), "partial"),
    (_child("failed", "NOT_APPLIED"), "failed"),
    ({"status": "blocked", "axes": "UNKNOWN", "scope": {"start": "2026-03-01", "end": "2026-03-02"}}, "failed"),
])
def test_reference_children_claim_their_outcome(child: dict[str, Any], outcome: str) -> None:
    assert unit_claims(spec("reference_json"), json.dumps({"children": [child]})) == ({"2026-03-01": outcome}, None)


def test_a_child_without_a_scope_claims_no_day() -> None:
    children = [{"status": "completed"}, {"status": "completed", "scope": "2026-03-01"}]
    assert unit_claims(spec("reference_json"), json.dumps({"children": children})) == ({}, None)


def test_a_later_unit_for_the_same_day_decides_its_claim() -> None:
    stdout = _units({"scope_from": "2026-03-01", "scope_to": "2026-03-02", "status": "completed"},
                    {"scope_from": "2026-03-01", "scope_to": "2026-03-02", "status": "failed"})
    assert unit_claims(spec("units_json"), stdout) == ({"2026-03-01": "failed"}, None)


def test_the_documented_error_document_claims_nothing_and_is_no_problem() -> None:
    document = json.dumps({"ok": False, "exit_code": 2, "errors": [{"code": "x", "message": "y"}]})
    assert unit_claims(spec("reference_json"), document) == ({}, None)
    assert unit_claims(spec("reference_json"), json.dumps({"ok": False, "errors": "x"})) == (
        {}, "its reference_json result has no list of children")
    assert unit_claims(spec("units_json"), document) == ({}, "its units_json result has no list of units")


def test_a_sink_without_a_declared_result_claims_nothing() -> None:
    assert unit_claims(spec("none"), _units({"scope_from": "2026-03-01", "scope_to": "2026-03-02",
                                             "status": "completed"})) == ({}, None)


@pytest.mark.parametrize(("result", "stdout", "problem"), [
    ("units_json", "", "its units_json result is unreadable (no output)"),
    ("units_json", "\n  \n", "its units_json result is unreadable (no output)"),
    ("units_json", "done!", "its units_json result is unreadable (not valid JSON (JSONDecodeError))"),
    ("units_json", '{"units": [], "units": []}', "its units_json result is unreadable (duplicate member 'units')"),
    ("units_json", '{"units": [NaN]}', "its units_json result is unreadable (NaN is not JSON)"),
    ("units_json", "[" * 100_000 + "]" * 100_000, "its units_json result is unreadable (not valid JSON "
                                                  "(RecursionError))"),
    ("units_json", '{"units": [null]}', "its units_json result lists a non-object"),
    ("units_json", '{"units": {}}', "its units_json result has no list of units"),
    ("units_json", "[]", "its units_json result has no list of units"),
    ("units_json", '{"children": []}', "its units_json result has no list of units"),
    ("reference_json", '{"children": [1, "x"]}', "its reference_json result lists a non-object"),
    ("reference_json", '{"units": []}', "its reference_json result has no list of children"),
    ("reference_json", '"children"', "its reference_json result has no list of children"),
])
def test_hostile_results_are_a_problem_never_a_crash(result: str, stdout: str, problem: str) -> None:
    claims, found = unit_claims(spec(result), stdout)
    assert (claims, found) == ({}, problem)


def test_a_result_naming_more_days_than_any_scope_is_a_problem_found_fast() -> None:
    huge = {"scope_from": "0001-01-01", "scope_to": "9999-12-31", "status": "completed"}
    # Refused before a day is built (unbounded, these 1000 units would be billions of claims).
    assert unit_claims(spec("units_json"), _units(*[huge] * 1000)) == (
        {}, f"its units_json result names more than {MAX_CLAIMED_DAYS} days")
    reference = json.dumps({"children": [_child("completed", "X", "0001-01-01", "9999-12-31")]})
    assert unit_claims(spec("reference_json"), reference)[1] == (
        f"its reference_json result names more than {MAX_CLAIMED_DAYS} days")


def test_the_bound_is_on_every_day_the_result_names_in_all() -> None:
    def unit(start: str, end: str) -> dict[str, str]:
        return {"scope_from": start, "scope_to": end, "status": "completed"}

    first = date(2000, 1, 1)
    at_bound = (first + timedelta(days=MAX_CLAIMED_DAYS)).isoformat()
    claims, problem = unit_claims(spec("units_json"), _units(unit("2000-01-01", at_bound)))
    assert problem is None and len(claims) == MAX_CLAIMED_DAYS
    half = (first + timedelta(days=MAX_CLAIMED_DAYS // 2 + 1)).isoformat()
    claims, problem = unit_claims(spec("units_json"), _units(unit("2000-01-01", half), unit("2000-01-01", half)))
    assert problem == f"its units_json result names more than {MAX_CLAIMED_DAYS} days"
    assert len(claims) == MAX_CLAIMED_DAYS // 2 + 1  # the claims before it are kept


def test_claims_before_a_non_object_are_kept() -> None:
    stdout = _units({"scope_from": "2026-03-01", "scope_to": "2026-03-02", "status": "completed"}, 7)
    assert unit_claims(spec("units_json"), stdout) == ({"2026-03-01": "completed"},
                                                       "its units_json result lists a non-object")


def test_only_the_last_line_is_the_result() -> None:
    stdout = _units({"scope_from": "2026-03-01", "scope_to": "2026-03-02", "status": "completed"}) + "\nbye\n"
    assert unit_claims(spec("units_json"), stdout)[1] == "its units_json result is unreadable (not valid JSON " \
                                                         "(JSONDecodeError))"


# --- checkpoints ----------------------------------------------------------------------------------------------


def test_the_checkpoint_a_sink_claims() -> None:
    reference = json.dumps({"children": [], "frontier": {"frontier_scope_end": "2026-03-03T00:00:00Z"}})
    assert checkpoint_claim(spec("reference_json"), reference) == "2026-03-03"
    assert checkpoint_claim(spec("units_json"), json.dumps({"units": [], "checkpoint": "2026-03-02"})) == "2026-03-02"


@pytest.mark.parametrize(("result", "stdout"), [
    ("none", json.dumps({"checkpoint": "2026-03-02"})),
    ("units_json", ""), ("units_json", "[]"), ("units_json", json.dumps({"checkpoint": "2026-03"})),
    ("units_json", json.dumps({"checkpoint": 20260302})), ("units_json", json.dumps({"units": []})),
    ("reference_json", json.dumps({"checkpoint": "2026-03-02"})),  # the reference result states its frontier
    ("reference_json", json.dumps({"frontier": "2026-03-02"})),
    ("reference_json", json.dumps({"frontier": {"frontier_scope_end": None}})),
])
def test_no_checkpoint_claimed(result: str, stdout: str) -> None:
    assert checkpoint_claim(spec(result), stdout) is None


# --- stated codes ---------------------------------------------------------------------------------------------


def test_the_codes_a_result_states_in_order_once_each() -> None:
    reference = json.dumps({"error_code": "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN", "children": [
        {"error_code": None}, {"error_code": "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN"},
        {"error_code": "REST_DELIVERY_COUNT_MISMATCH"}]})
    assert stated_codes(spec("reference_json"), reference) == (
        "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN", "REST_DELIVERY_COUNT_MISMATCH")
    error_document = json.dumps({"ok": False, "errors": [{"code": "journal.unavailable", "message": "m"}]})
    assert stated_codes(spec("reference_json"), error_document) == ("other",)
    units = json.dumps({"units": [{"status": "failed", "code": "REST_DELIVERY_UNSAFE_RETRY"}, {"status": "completed"}]})
    assert stated_codes(spec("units_json"), units) == ("REST_DELIVERY_UNSAFE_RETRY",)


def test_a_stated_code_outside_the_seeds_catalogue_never_reaches_the_history_verbatim() -> None:
    sentinel = "SENTINEL_SECRET_7f3a9c"
    stdout = json.dumps({"units": [{"code": sentinel}, {"code": {"nested": sentinel}}, {"code": 7}]})
    assert stated_codes(spec("units_json"), stdout) == ("other",)
    assert stated_codes(spec("none"), json.dumps({"error_code": "REST_DELIVERY_UNSAFE_RETRY"})) == ()
    assert stated_codes(spec("units_json"), "not json") == ()


# --- blocked children ----------------------------------------------------------------------------------------


def test_blocked_children_with_an_unknown_or_partial_effect_go_to_the_operator() -> None:
    children = [_child("blocked", "UNKNOWN", operation_id="a"),
                _child("blocked", "PARTIALLY_APPLIED", operation_id="b"),
                _child("blocked", "NOT_APPLIED", operation_id="c"), _child("completed", "UNKNOWN", operation_id="d"),
                _child("blocked", "UNKNOWN", operation_id=7), _child("blocked", "UNKNOWN", operation_id="x" * 201),
                _child("blocked", "UNKNOWN", operation_id="y" * 200), {"status": "blocked", "axes": None}, "z"]
    assert blocked_children(json.dumps({"children": children})) == ["a", "b", "y" * 200]


@pytest.mark.parametrize("stdout", ["", "nope", '{"children": {}}', "[]", '{"ok": false, "errors": []}'])
def test_no_blocked_children_in_an_unreadable_result(stdout: str) -> None:
    assert blocked_children(stdout) == []


# --- the launcher ---------------------------------------------------------------------------------------------


def test_the_launcher_holds_the_sink_until_go_and_reports_its_exit(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = f"open({str(marker)!r}, 'w').close(); print('{{\"units\": []}}'); raise SystemExit(4)"
    launched = Launched(Invocation((sys.executable, "-c", script), tmp_path / "work", {}))
    try:
        assert not launched.exited() and not marker.exists()
    finally:
        finished = launched.go_and_wait(timeout=60)
    assert marker.exists() and finished.exit_code == 4 and not finished.timed_out
    assert finished.stdout.strip() == '{"units": []}' and finished.ended_at >= finished.started_at


def test_a_hanging_sink_is_killed_at_its_limit_and_said_so(tmp_path: Path) -> None:
    reaped: list[bool] = []
    launched = Launched(Invocation((sys.executable, "-c", "import time; time.sleep(60)"), tmp_path, {}),
                        before_reap=lambda: reaped.append(launched.exited()))
    finished = launched.go_and_wait(timeout=1.0)
    assert finished.timed_out and finished.exit_code == -9 and reaped == [True]


def test_a_kill_before_go_never_runs_the_sink(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    launched = Launched(Invocation((sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"), tmp_path, {}))
    launched.kill()
    finished = launched.wait(timeout=30)
    assert finished.exit_code == -9 and not marker.exists()
