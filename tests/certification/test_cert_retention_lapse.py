"""``retention_lapse``: the first run dies once the receiver committed, then the receiver's fence key
retention passes in real time before the next run.

The fault is driven here against fakes that record what was asked of the proxy and the receiver;
the live rows run the reference sink and the naive baselines (``scenarios/matrix/*-short-keys.yaml``:
the reference sink never resends past the horizon, the baselines are caught duplicating).
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from certification import receiver_faults
from certification.coverage import Cell, fault_space, row_cells
from certification.faults import KILLED, RULE_ID, FaultContext
from certification.receiver_faults import LAPSE_MARGIN_S, RetentionLapseFault
from certification.scenarios import BUNDLED, LAPSE_MAX_S, CatalogError, Fault, bundled_rows, load_catalog
from certification.services import RuleRefused
from certification.sinks import Finished

ROWS = {row.row_id: row for row in bundled_rows()}
SYNC = ROWS["sync.short_keys.retention_lapse"]
BEHAVIOUR = {"sync": {"enabled": True, "fence": {"type": "idempotency_key", "retention_seconds": 86400}},
             "async_jobs": {"fence": {"type": "filename_key"}}, "rules": []}


class FakeReceiver:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = copy.deepcopy(document)
        self.puts: list[dict[str, Any]] = []

    def behaviour(self) -> dict[str, Any]:
        return copy.deepcopy(self.document)

    def put_behaviour(self, document: dict[str, Any]) -> None:
        self.puts.append(copy.deepcopy(document))
        self.document = copy.deepcopy(document)


class FakeProxy:
    def __init__(self) -> None:
        self.rules: list[dict[str, Any]] = []
        self.deleted: list[str] = []

    def add_rule(self, rule: dict[str, Any]) -> None:
        self.rules.append(rule)

    def delete_rule(self, rule_id: str) -> None:
        self.deleted.append(rule_id)


@dataclasses.dataclass
class FakeLaunched:
    pid: int = 4242


def _ctx(receiver: FakeReceiver, proxy: FakeProxy, family: str = "sync_batch") -> FaultContext:
    row = dataclasses.replace(SYNC, family=family)
    return FaultContext(row=row, proxy=proxy, receiver=receiver, seed=0)  # type: ignore[arg-type]


def _lapse(seconds: float = 5.0) -> RetentionLapseFault:
    return RetentionLapseFault(Fault(type="retention_lapse", retention_seconds=seconds))


def _killed_log(pid: int) -> list[dict[str, Any]]:
    return [{"faults": [{"rule_id": RULE_ID, "action": "kill", "detail": {"result": "killed", "pid": pid}}]}]


def _finished(code: int) -> Finished:
    return Finished(exit_code=code, stdout="", started_at=0.0, ended_at=1.0)


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []
    monkeypatch.setattr(receiver_faults.time, "sleep", waits.append)
    return waits


@pytest.mark.parametrize(("family", "section"), [("sync_batch", "sync"), ("async_bulk_job", "async_jobs")])
def test_the_receiver_keeps_the_key_for_the_rows_retention_then_the_worker_dies_after_commit(
        family: str, section: str) -> None:
    receiver, proxy = FakeReceiver(BEHAVIOUR), FakeProxy()
    fault = _lapse(4.0)
    fault.arm(_ctx(receiver, proxy, family), FakeLaunched())  # type: ignore[arg-type]
    assert receiver.document[section]["fence"]["retention_seconds"] == 4.0
    other = "async_jobs" if section == "sync" else "sync"
    assert receiver.document[other] == BEHAVIOUR[other]  # the other family's fence is untouched
    assert proxy.rules == [{"id": RULE_ID, "match": {"method": "POST"}, "fire": "once",
                            "fault": {"action": "kill", "phase": "response", "pid": 4242}}]


def test_a_receiver_without_a_fence_refuses_the_row() -> None:
    receiver, proxy = FakeReceiver({"sync": {"enabled": True}, "rules": []}), FakeProxy()
    with pytest.raises(RuleRefused, match="keeps keys"):
        _lapse().arm(_ctx(receiver, proxy), FakeLaunched())  # type: ignore[arg-type]
    assert proxy.rules == []


def test_the_retention_passes_in_real_time_after_the_first_run_and_the_receiver_is_put_back(
        slept: list[float]) -> None:
    receiver, proxy = FakeReceiver(BEHAVIOUR), FakeProxy()
    ctx = _ctx(receiver, proxy)
    fault = _lapse(5.0)
    fault.arm(ctx, FakeLaunched())  # type: ignore[arg-type]
    assert slept == []  # nothing waits before the first run ends
    fault.before_first_reap(ctx)
    assert proxy.deleted == [RULE_ID]
    assert slept == [5.0 + LAPSE_MARGIN_S]
    fault.restore(ctx)
    assert receiver.document == BEHAVIOUR


def test_evidence_needs_the_kill_after_commit_and_the_lapse(slept: list[float]) -> None:
    receiver, proxy = FakeReceiver(BEHAVIOUR), FakeProxy()
    ctx = _ctx(receiver, proxy)
    fault = _lapse(5.0)
    fault.arm(ctx, FakeLaunched())  # type: ignore[arg-type]
    unlapsed = fault.evidence(ctx, [_finished(KILLED)], _killed_log(4242))
    assert unlapsed.fired is False and "lapsed" not in unlapsed.detail
    fault.before_first_reap(ctx)
    evidence = fault.evidence(ctx, [_finished(KILLED)], _killed_log(4242))
    assert evidence.fired is True and evidence.kind == "retention_lapse"
    assert evidence.detail == ("the proxy killed the first run at response, then 6 s passed: the receiver's 5 s "
                               "key retention lapsed before the next run")
    assert fault.evidence(ctx, [_finished(0)], _killed_log(4242)).fired is False  # the run was not killed
    assert fault.evidence(ctx, [_finished(KILLED)], _killed_log(999)).fired is False  # another pid was
    assert fault.evidence(ctx, [_finished(KILLED)], []).fired is False  # the proxy never killed


def test_the_row_states_a_retention_the_harness_can_wait_out() -> None:
    with pytest.raises(ValidationError, match="needs retention_seconds"):
        Fault(type="retention_lapse")
    with pytest.raises(ValidationError, match="only it, names retention_seconds"):
        Fault(type="proxy_kill", phase="response", retention_seconds=5.0)
    with pytest.raises(ValidationError):
        Fault(type="retention_lapse", retention_seconds=LAPSE_MAX_S + 1)
    with pytest.raises(ValidationError):
        Fault(type="retention_lapse", retention_seconds=0)
    assert Fault(type="retention_lapse", retention_seconds=LAPSE_MAX_S).retention_seconds == LAPSE_MAX_S


def test_a_catalog_whose_receiver_keeps_no_keys_is_refused(tmp_path: Path) -> None:
    source = (BUNDLED / "sync-bare-409.yaml").read_text()
    head = source.split("rows:")[0].replace("../", f"{BUNDLED.parent}/")
    catalog = tmp_path / "lapse.yaml"
    catalog.write_text(head + "rows:\n  - id: lapse\n    fault: {type: retention_lapse, retention_seconds: 5}\n"
                              "    expect: {end: [recovery]}\n")
    with pytest.raises(CatalogError, match="keeps no fence keys"):
        load_catalog(catalog)


def test_the_rows_cover_the_key_expiry_cell_of_a_personality_that_forgets_keys() -> None:
    cell = Cell("receiver", ("key_expiry",), "sync_batch", "json-batches", "sqlite")
    assert row_cells(SYNC, "sqlite") == [cell]
    space = fault_space()
    assert cell in space
    stripe = ROWS["sync.stripe.short_keys.retention_lapse"]
    assert row_cells(stripe, "postgres") == [Cell("receiver", ("key_expiry",), "sync_batch", "stripe-like", "postgres")]
    # aip-155 answers a lapsed request_id with the current state and no receipt: a cell of its own
    aip155 = ROWS["sync.aip155.short_keys.retention_lapse"]
    assert row_cells(aip155, "sqlite") == [Cell("receiver", ("key_expiry",), "sync_batch", "aip-155-request-id",
                                                "sqlite")]
    assert aip155.caught_duplicating == ("naive-retry", "naive-idempotency-key")
    assert aip155.expect.end == ("blocked",)
    # Keys kept for good (fingerprint ledger) or none kept (bare 409): nothing can lapse.
    assert not [c for c in space if c.key == ("key_expiry",) and c.personality in ("fingerprint-ledger", "bare-409")]
