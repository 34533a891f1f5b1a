"""The pre-submit fences through `delivery run`, against the real receiver through the fault proxy:
every refusal happens before ANY request (the proxy's log and the receiver's ledger are the judges).

* an intent conflict: the same delivery re-run under different receiver semantics;
* overlapping generations: a higher generation refused while a lower overlapping one is UNKNOWN
  (recorded in the journal: the result and a later inspect say so), and a stale (lower) generation
  refused;
* an incremental append over a scope already appended.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import Operator, running_services
from sv_support import Services

pytestmark = pytest.mark.timeout(300)
SYNC = "measurements-sync"


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    with running_services("json-batches", tmp_path_factory.mktemp("e2e-fences")) as running:
        yield running


@pytest.fixture
def operator(tmp_path: Path, services: Services) -> Operator:
    services.reset()
    return Operator(tmp_path, services)


def test_an_intent_conflict_is_refused_before_any_request(operator: Operator) -> None:
    # Admitted, then killed before its first request: the journal holds the parent, nothing was sent.
    first = operator.run(SYNC, "2026-03-01", "2026-03-05", failpoint="admit.committed")
    assert first.code == -9, first.stderr
    assert operator.services.proxy_log() == []
    # The same delivery (same keys) now means something else at the receiver.
    operator.edit_yaml("bindings/mock_measurements.yaml", remote_resource_namespace="ingest-v2")
    again = operator.run(SYNC, "2026-03-01", "2026-03-05")
    assert again.code == 2, again.stderr
    assert again.error_codes == ["REST_DELIVERY_INTENT_CONFLICT"]
    assert operator.services.proxy_log() == [] and operator.services.effects() == []
    assert operator.services.requests() == []


def _leave_unknown(operator: Operator) -> None:
    """Deliver 2026-03-01..05 (two children) so that one child is UNKNOWN: the server asks it to wait
    far beyond the budget (``REST_DELIVERY_RETRY_AFTER_EXCEEDS_BUDGET``), the other is applied."""
    operator.services.rule({"match": {"method": "POST"}, "fire": "once",
                            "fault": {"action": "status", "status": 503, "headers": {"Retry-After": "86400"}}})
    result = operator.run(SYNC, "2026-03-01", "2026-03-05")
    assert result.code == 4, result.stderr
    assert sorted(c["axes"]["remote_effect"] for c in result.children) == ["FULLY_APPLIED", "UNKNOWN"]
    unknown = next(c for c in result.children if c["axes"]["remote_effect"] == "UNKNOWN")
    assert unknown["error_code"] == "REST_DELIVERY_RETRY_AFTER_EXCEEDS_BUDGET"


def test_a_higher_overlapping_generation_waits_for_the_unknown_one_and_a_stale_one_is_refused(
    operator: Operator,
) -> None:
    _leave_unknown(operator)
    posts = len(operator.posts())
    assert posts == 2  # each child once
    # Generation 2026-03-07 overlaps the UNKNOWN child of generation 2026-03-05: refused, exit 4,
    # said in the result (durably: inspect says the same).
    newer = operator.run(SYNC, "2026-03-01", "2026-03-07")
    assert newer.code == 4, newer.stderr
    assert newer.document["error_code"] == "REST_DELIVERY_OVERLAPPING_EFFECT_IN_FLIGHT"
    inspected = operator.inspect(newer.document["parent_id"])
    assert inspected["exit_code"] == 4 and inspected["error_code"] == "REST_DELIVERY_OVERLAPPING_EFFECT_IN_FLIGHT"
    # Only the children that overlap the unknown one wait; the others were free to go.
    waiting = [c for c in newer.children if c["error_code"] == "REST_DELIVERY_OVERLAPPING_EFFECT_IN_FLIGHT"]
    assert waiting and all(c["axes"]["execution_state"] == "SEALED" for c in waiting)
    sent = [c for c in newer.children if c["status"] == "completed"]
    assert len(operator.posts()) == posts + len(sent)
    posts = len(operator.posts())
    # Generation 2026-03-03 is older than overlapping admitted generations: stale, exit 2.
    stale = operator.run(SYNC, "2026-03-01", "2026-03-03")
    assert stale.code == 2, stale.stderr
    assert stale.error_codes == ["REST_DELIVERY_STALE_GENERATION"]
    assert len(operator.posts()) == posts, "a refused generation sent nothing"
    assert len(operator.services.effects()) == 1 + len(sent)


def test_an_append_over_an_applied_scope_is_refused_before_any_request(operator: Operator) -> None:
    sink = _sink(operator)
    mutation = sink["mutation"]
    assert isinstance(mutation, dict)
    operator.edit_yaml("workloads/measurements-sync.yaml", sink={**sink, "mutation": {**mutation,
                                                                                      "kind": "incremental_append"}})
    applied = operator.run(SYNC, "2026-03-01", "2026-03-05")
    assert applied.code == 0, applied.stderr
    assert [c["axes"]["remote_effect"] for c in applied.children] == ["FULLY_APPLIED"] * 2
    posts = len(operator.posts())
    # A later generation over the same days: the append would add the rows a second time.
    again = operator.run(SYNC, "2026-03-01", "2026-03-07")
    assert again.code == 2, again.stderr
    assert again.document["error_code"] == "REST_DELIVERY_APPEND_SCOPE_ALREADY_APPLIED"
    refused = [c for c in again.children if c["error_code"] == "REST_DELIVERY_APPEND_SCOPE_ALREADY_APPLIED"]
    assert refused and all(c["axes"]["execution_state"] == "FINALIZED" for c in refused)
    # Only the day not appended before was sent; the refused ones sent nothing.
    sent = [c for c in again.children if c["status"] == "completed"]
    assert all(c["scope"]["start"] >= "2026-03-05" for c in sent)
    assert len(operator.posts()) == posts + len(sent)
    assert len(operator.services.effects()) == 2 + len(sent)


def _sink(operator: Operator) -> dict[str, object]:
    import yaml

    document = yaml.safe_load((operator.scenarios / "workloads" / f"{SYNC}.yaml").read_text(encoding="utf-8"))
    sink = document["sink"]
    assert isinstance(sink, dict)
    return sink


def test_the_overlapping_generation_runbook_ends_completed_in_two_commands(operator: Operator) -> None:
    _leave_unknown(operator)
    older = operator.run(SYNC, "2026-03-01", "2026-03-05").document["parent_id"]  # blocked, unchanged
    newer = operator.run(SYNC, "2026-03-01", "2026-03-07", "--correction-revision", "1")
    assert newer.code == 4 and newer.document["error_code"] == "REST_DELIVERY_OVERLAPPING_EFFECT_IN_FLIGHT"
    # 1. Resolve the older one (the server's 503 answered before forwarding: absence is proven).
    reconciled = operator.delivery("reconcile", "--operation-id", older, "--apply")
    assert {item["outcome"] for item in reconciled.document["reconciled"]} == {"absence_proven"}, \
        reconciled.stderr
    # 2. The newer generation goes.
    resumed = operator.delivery("resume", "--operation-id", newer.document["parent_id"], "--apply")
    assert resumed.code == 0, resumed.stderr
    assert all(c["status"] == "completed" for c in resumed.children)
