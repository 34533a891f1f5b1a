"""No dead end for the operator, through `delivery` against the real json-batches receiver (fenced by
an Idempotency-Key, with a certified read-only summary) behind the fault proxy:

* a request that never started (a missing credential) waits for the next run, which delivers it;
* a bare 409 or a 500 on every attempt leaves the effect unknown; a reconciliation of the parent
  proves exact absence with the summary, and the next run delivers it once;
* a partial application is abandoned and delivered again as an explicit new generation (the
  runbook's three commands, taken from the CLI's own output);
* results say what they are: a changed source is an intent conflict before any request, an empty
  interval is skipped with exit 0, a reversed scope is exit 2; `inspect` text names parent and
  children; the state directory is never written through a foreign file or a symlink.

The receiver's ledger and the proxy's log are the judges.
"""

from __future__ import annotations

import shlex
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import Operator, Result, operator_on, running_services
from sv_support import Services

pytestmark = pytest.mark.timeout(300)
SYNC = "measurements-sync"
SCOPE = ("2026-03-01", "2026-03-05")


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    with running_services("json-batches", tmp_path_factory.mktemp("e2e-operator")) as running:
        yield running


@pytest.fixture
def operator(tmp_path: Path, services: Services) -> Iterator[Operator]:
    with operator_on(tmp_path, services) as op:
        yield op


def _applied_once(operator: Operator, result: Result) -> None:
    assert result.code == 0, result.stderr[-2000:]
    assert all(c["status"] == "completed" for c in result.children)
    effects = operator.services.effects()
    assert len(effects) == len(result.children) == 2
    assert len({e["scope_start"] for e in effects}) == 2, "each child applied exactly once"


def _run_command(operator: Operator, command: str) -> Result:
    """Run a `delivery` command exactly as the CLI printed it (its own --state-dir included)."""
    args = shlex.split(command)
    assert args[0] == "delivery"
    return operator.delivery(*[a for a in args[1:] if a != "--format"])


def test_a_missing_credential_waits_for_the_next_run_and_names_the_reference(operator: Operator) -> None:
    first = operator.run(SYNC, *SCOPE, token=False)
    assert first.code == 3, first.stderr
    assert operator.posts() == [] and operator.services.effects() == []
    for child in first.children:
        assert (child["status"], child["reason"]) == ("blocked", "credential_unavailable")
        assert child["axes"]["execution_state"] == "RETRY_WAIT"
        assert "env://MOCK_RECEIVER_TOKEN" in child["message"] and "e2e-sentinel" not in child["message"]
    assert operator.inspect(first.document["parent_id"])["exit_code"] == 3, "inspect agrees with the run"
    _applied_once(operator, operator.run(SYNC, *SCOPE))


@pytest.mark.parametrize("fault", [
    # A bare 409 is never proof and never replayed; the receiver's own 500 on every replay is not
    # deferred (a receiver that saves its answer per key replays it): both unknown until reconciled.
    {"fire": "once", "fault": {"action": "status", "status": 409, "body": ""}},
    {"fire": "always", "fault": {"action": "status", "status": 500}},
])
def test_an_unknown_effect_answered_before_forwarding_is_reconciled_and_delivered(
        operator: Operator, fault: dict[str, object]) -> None:
    operator.services.rule({"id": "fault", "match": {"method": "POST"}, **fault})
    lost = operator.run(SYNC, *SCOPE)
    assert lost.code == 4, lost.stderr
    parent = lost.document["parent_id"]
    assert operator.inspect(parent)["exit_code"] == 4
    operator.services.http.delete(operator.services.control_url + "/rules/fault",
                                  headers={"X-Restproof-Admin": "1"})
    reconciled = operator.delivery("reconcile", "--operation-id", parent, "--apply")
    assert reconciled.code in (0, 3), reconciled.stderr
    outcomes = {item["outcome"] for item in reconciled.document["reconciled"]}
    assert outcomes == {"absence_proven"}, "never 'contradictory': the receiver holds nothing of it"
    posts = len(operator.posts())
    _applied_once(operator, operator.run(SYNC, *SCOPE))
    assert len(operator.posts()) > posts


def test_a_503_on_every_replay_under_the_fence_waits_for_the_next_run_which_delivers(operator: Operator) -> None:
    # Every answer a 503 (the receiver cannot take it now): the certified fence makes a same-key
    # replay harmless, so once this run's budget is spent the attempts stay SUBMITTING (pending,
    # exit 3) and the next run replays them; no operator step, no unknown effect.
    operator.services.rule({"id": "fault", "match": {"method": "POST"}, "fire": "always",
                            "fault": {"action": "status", "status": 503}})
    pending = operator.run(SYNC, *SCOPE)
    assert pending.code == 3, pending.stderr
    for child in pending.children:
        assert (child["status"], child["reason"]) == ("pending", "fenced_replay_due")
        assert child["axes"]["execution_state"] == "SUBMITTING" and child.get("error_code") is None
    assert operator.inspect(pending.document["parent_id"])["exit_code"] == 3, "inspect agrees with the run"
    assert operator.services.effects() == []
    operator.services.http.delete(operator.services.control_url + "/rules/fault",
                                  headers={"X-Restproof-Admin": "1"})
    _applied_once(operator, operator.run(SYNC, *SCOPE))


def test_a_partial_application_is_abandoned_and_delivered_as_a_new_generation(operator: Operator) -> None:
    behaviour = operator.behaviour()
    behaviour["rules"] = [{"name": "half-rejected", "match": {"endpoints": ["sync_submit"]}, "when": {"nth": [1]},
                           "action": {"kind": "reject_rows", "every_nth_row": 2}}]
    operator.switch_behaviour(behaviour)
    partial = operator.run(SYNC, *SCOPE)
    assert partial.code == 4, partial.stderr
    blocked = next(c for c in partial.children if c["status"] == "blocked")
    assert blocked["error_code"] == "REST_DELIVERY_PARTIALLY_APPLIED"
    # The runbook: at most three commands, each taken from the CLI's own output.
    abandon = next(c for c in blocked["next_commands"] if c.startswith("delivery abandon"))
    abandoned = _run_command(operator, abandon)
    assert abandoned.code == 5, abandoned.stderr  # nothing further happens to this generation on its own
    correction = next(c for c in abandoned.document["children"] if c["operation_id"] == blocked["operation_id"])
    command = next(c for c in correction["next_commands"] if "--correction-revision 1" in c)
    fixed = operator.behaviour()
    fixed["rules"] = []
    operator.switch_behaviour(fixed)
    delivered = _run_command(operator, command.replace("<workload>", operator.workload(SYNC)))
    assert delivered.code == 0, delivered.stderr
    assert all(c["status"] == "completed" for c in delivered.children)


def test_a_rerun_whose_source_changed_is_an_intent_conflict_before_any_request(operator: Operator) -> None:
    first = operator.run(SYNC, *SCOPE)
    assert first.code == 0, first.stderr
    posts = len(operator.posts())
    data = operator.scenarios / "workloads" / "data" / "measurements.csv"
    lines = data.read_text(encoding="utf-8").splitlines()
    changed = [lines[0], *(line.replace(",1", ",9", 1) if "2026-03-02" in line else line for line in lines[1:])]
    assert changed != lines
    data.write_text("\n".join(changed) + "\n", encoding="utf-8")
    again = operator.run(SYNC, *SCOPE)
    assert again.code == 2, again.stderr
    assert again.error_codes == ["REST_DELIVERY_INTENT_CONFLICT"]
    assert len(operator.posts()) == posts


def test_an_empty_interval_is_skipped_with_exit_0(operator: Operator) -> None:
    skipped = operator.run(SYNC, "2030-01-01", "2030-01-03")
    assert skipped.code == 0, skipped.stderr
    assert (skipped.document["outcome"], skipped.document["reason"], skipped.document["children"]) == (
        "skipped", "empty_interval", [])
    assert operator.posts() == []


@pytest.mark.parametrize("scope", [("2026-03-05", "2026-03-01"), ("2026-03-05", "2026-03-05")])
def test_a_reversed_or_empty_scope_is_exit_2(operator: Operator, scope: tuple[str, str]) -> None:
    refused = operator.run(SYNC, *scope)
    assert refused.code == 2 and refused.error_codes == ["cli.invalid_scope"], refused.stderr


def test_text_output_names_parent_and_children_and_reconcile_prints_its_result(operator: Operator) -> None:
    done = operator.run(SYNC, *SCOPE)
    parent = done.document["parent_id"]
    text = operator.delivery("inspect", "--operation-id", parent, fmt="text")
    assert text.code == 0 and parent in text.document["text"]
    assert all(c["operation_id"] in text.document["text"] for c in done.children)
    refused = operator.delivery("reconcile", "--operation-id", parent, fmt="text")
    assert refused.code == 0 and f"parent {parent}: completed" in refused.document["text"]


def test_a_foreign_database_or_a_symlink_at_the_journal_path_is_refused_untouched(operator: Operator) -> None:
    operator.state.mkdir(parents=True, exist_ok=True)
    journal = operator.state / "journal.sqlite3"
    with sqlite3.connect(journal) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    before = journal.read_bytes()
    for args in (("inspect", "--operation-id", "op_x"), ("resume", "--operation-id", "op_x", "--apply")):
        refused = operator.delivery(*args)
        assert refused.code == 2 and refused.error_codes == ["journal.not_a_journal"], refused.stderr
    ran = operator.run(SYNC, *SCOPE)
    assert ran.code == 2 and ran.error_codes == ["journal.not_a_journal"], ran.stderr
    assert journal.read_bytes() == before and not journal.with_name("journal.sqlite3-wal").exists()
    assert operator.posts() == []
    journal.unlink()
    target = operator.state.parent / "elsewhere.sqlite3"
    journal.symlink_to(target)
    linked = operator.run(SYNC, *SCOPE)
    assert linked.code == 2 and linked.error_codes == ["state.symlink_refused"], linked.stderr
    assert not target.exists() and operator.posts() == []


def test_a_journal_down_at_start_is_said_once_and_at_once(operator: Operator) -> None:
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    baseline = operator.run(SYNC, "2026-03-05", "2026-03-01")  # the same start-up, refused at once
    start_up = time.monotonic() - started
    assert baseline.code == 2
    operator.journal = f"postgresql://restproof@127.0.0.1:{port}/journal?connect_timeout=2"
    started = time.monotonic()
    down = operator.run(SYNC, *SCOPE)
    # One bounded connection attempt, not a pool's 30 s of reconnection attempts.
    assert time.monotonic() - started < start_up + 15, (time.monotonic() - started, start_up)
    assert down.code == 3, down.stderr
    errors = [line for line in down.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error[journal.unavailable"), down.stderr
