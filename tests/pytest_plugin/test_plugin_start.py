"""A part that cannot start fails its test with what went wrong, within the start-up bound, never a
hang and never a traceback: a behaviour file the receiver refuses, a personality that does not exist,
a TCP proxy binary that never answers, a receiver slower than the bound (once per catalog, not once
per row)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from plugin_runs import PLUGIN_TEST_LIMIT_S, run_pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(PLUGIN_TEST_LIMIT_S)]
LIMIT_S = 300.0
"""No run here may come near it: every failure is bounded by its own start-up limit."""
FIXTURE_TESTS = """\
import pytest

@pytest.mark.restproof_receiver("broken.yaml")
def test_a_refused_behaviour(restproof_receiver):
    pass

@pytest.mark.restproof_receiver("no-such-vendor")
def test_an_unknown_personality(restproof_proxy):
    pass

@pytest.mark.parametrize("restproof_receiver", ["stripe-like"], indirect=True)
def test_a_bundled_personality_by_parametrization(restproof_receiver):
    assert restproof_receiver.behaviour()["name"] == "stripe-like"
"""
NEVER_READY_TESTS = """\
def test_a_tcp_proxy_that_never_answers(restproof_tcp_proxy):
    pass
"""
SINK = """\
schema_id: restproof.sink_under_test.v2
name: never-run
role: certified
description: Its rows fail before it could run.
run: ["{python}", "-c", "raise SystemExit(0)"]
result: none
"""


def _errors(run_cases: tuple, prefix: str) -> dict[str, str]:
    return {case.name: case.message for case in run_cases if case.outcome == "error" and case.name.startswith(prefix)}


def test_a_refused_behaviour_and_an_unknown_personality_fail_their_tests_clearly(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("name: broken\nresources: [not, a, mapping]\n")
    (tmp_path / "test_parts.py").write_text(FIXTURE_TESTS)

    run = run_pytest(tmp_path, "test_parts.py", limit=LIMIT_S)

    outcomes = {case.name: case.outcome for case in run.cases}
    assert outcomes == {"test_a_refused_behaviour": "error", "test_an_unknown_personality": "error",
                        "test_a_bundled_personality_by_parametrization[stripe-like]": "passed"}, run.output[-3000:]
    errors = _errors(run.cases, "test_")
    assert "restproof: mock-receiver exited with status 2 before it was ready" in errors["test_a_refused_behaviour"]
    assert "no receiver personality 'no-such-vendor': name a bundled one (" in errors["test_an_unknown_personality"]
    assert "json-batches" in errors["test_an_unknown_personality"]
    assert "Traceback" not in run.output


def test_parts_slower_than_the_bound_fail_within_it(tmp_path: Path) -> None:
    never = tmp_path / "toxiproxy-never-ready"
    never.write_text("#!/bin/sh\nexec sleep 600\n")
    never.chmod(never.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "test_tcp.py").write_text(NEVER_READY_TESTS)
    (tmp_path / "never-run.yaml").write_text(SINK)

    run = run_pytest(tmp_path, "test_tcp.py", "--restproof-start-timeout", "0.2", "--restproof-sink", "never-run.yaml",
                     "--restproof-row", "sync.none", "--restproof-row", "sync.cut.request",
                     extra_env={"TOXIPROXY_SERVER": str(never)}, limit=LIMIT_S)

    assert run.returncode == pytest.ExitCode.TESTS_FAILED, run.output[-3000:]
    tcp = _errors(run.cases, "test_a_tcp")["test_a_tcp_proxy_that_never_answers"]
    assert "restproof: the TCP fault proxy could not be started:" in tcp
    assert "did not answer on http://127.0.0.1:" in tcp
    rows = {case.name: case for case in run.cases if case.classname == "restproof[never-run]"}
    assert {name: case.outcome for name, case in rows.items()} == {"sync.none": "failed", "sync.cut.request": "failed"}
    assert "restproof: sync.none: mock-receiver was not ready within 0.2 s" in rows["sync.none"].message
    # The second row does not wait again for a part that already failed to start.
    assert "(an earlier row of this catalog met it)" in rows["sync.cut.request"].message
    assert "Traceback" not in run.output
