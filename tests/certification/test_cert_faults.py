"""The day a targeted fault acts on (stated, or picked by the seed among days holding rows: the same
seed and row give the same day, another seed may give another) and the marker that selects the
first mutation request for that day, whatever the sink's batching; one fault object per type."""

from __future__ import annotations

import dataclasses

import pytest

from certification.fault_types import FAULT_TYPES, fault_of
from certification.faults import FaultContext, RowFault, day_marker, target_day
from certification.http_framing import RawRequest, RequestFramer
from certification.scenarios import DayTarget, Fault, Row, bundled_rows

ROWS = {row.row_id: row for row in bundled_rows()}
SEEDED = ROWS["sync.cut.after_commit"]
CONTRACT = SEEDED.contract
assert CONTRACT is not None and SEEDED.dataset is not None


def _with(row: Row, **fault: object) -> Row:
    return dataclasses.replace(row, fault=Fault(**{"type": "proxy", "rule": {}, **fault}))  # type: ignore[arg-type]


def test_a_stated_day_is_the_target_whatever_the_seed() -> None:
    row = _with(SEEDED, target=DayTarget(day="2026-03-03"))
    assert {target_day(row, seed) for seed in range(20)} == {"2026-03-03"}


def test_an_untargeted_fault_has_no_day() -> None:
    assert target_day(_with(SEEDED, target=None), 7) is None
    assert target_day(ROWS["sync.none"], 7) is None


def test_a_seeded_day_is_reproducible_and_holds_rows() -> None:
    days = [target_day(SEEDED, seed) for seed in range(40)]
    assert days == [target_day(SEEDED, seed) for seed in range(40)]
    assert SEEDED.dataset is not None and set(days) <= set(SEEDED.dataset.days_with_rows())
    assert len(set(days)) > 1  # the seed changes something


def test_the_seeded_pick_depends_on_the_row() -> None:
    other = dataclasses.replace(SEEDED, row_id="sync.other")
    assert [target_day(SEEDED, s) for s in range(40)] != [target_day(other, s) for s in range(40)]


def test_a_scope_without_rows_picks_among_all_its_days() -> None:
    assert SEEDED.dataset is not None
    empty = dataclasses.replace(SEEDED.dataset, expected={day: type(rows)() for day, rows in
                                                          SEEDED.dataset.expected.items()})
    row = dataclasses.replace(SEEDED, dataset=empty)
    assert {target_day(row, seed) for seed in range(40)} <= set(empty.universe)


def test_a_seeded_row_without_a_dataset_has_no_day() -> None:
    assert target_day(dataclasses.replace(SEEDED, dataset=None), 1) is None


def _request(data: bytes) -> RawRequest:
    framer = RequestFramer()
    framer.feed(data)
    return framer.requests[0]


def _submit(start: str, end: str, body: bytes = b"[]") -> RawRequest:
    return _request(f"POST /mock/v1/resources/measurements/batches?range_start={start}&range_end={end} HTTP/1.1\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n".encode() + body)


def test_the_marker_selects_mutations_for_its_day_whatever_their_batching() -> None:
    assert CONTRACT is not None
    marker = day_marker("2026-03-02", CONTRACT)
    assert marker(_submit("2026-03-02", "2026-03-03")) is True
    assert marker(_submit("2026-03-01", "2026-03-05")) is True  # one request for the whole scope
    assert marker(_submit("2026-03-01", "2026-03-02")) is False
    assert marker(_submit("2026-03-03", "2026-03-05")) is False


def test_the_marker_never_selects_a_read() -> None:
    assert CONTRACT is not None
    marker = day_marker("2026-03-02", CONTRACT)
    poll = _request(b"GET /mock/v1/resources/measurements/summary?range_start=2026-03-02&range_end=2026-03-03 "
                    b"HTTP/1.1\r\n\r\n")
    assert marker(poll) is False


def test_a_body_scoped_request_waits_for_its_body_then_decides() -> None:
    assert CONTRACT is not None
    marker = day_marker("2026-03-02", CONTRACT)
    body = b'[{"event_date": "2026-03-02"}]'
    head = f"POST /mock/v1/resources/events/batches HTTP/1.1\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    assert marker(_request(head + body[:5])) is None  # undecided until the body is complete
    assert marker(_request(head + body)) is True
    other = b'[{"event_date": "2026-03-04"}]'
    assert marker(_request(head + other)) is False
    assert marker(_request(head.replace(b"Content-Length: 30", b"Content-Length: 3") + b"xyz")) is False


def test_every_fault_type_has_its_object() -> None:
    assert set(FAULT_TYPES) == set(Fault.model_fields["type"].annotation.__args__)  # type: ignore[union-attr]
    for kind, cls in FAULT_TYPES.items():
        spec = Fault(type=kind, rule={}, phase="request", point="journal.reserve_submitting.after",  # type: ignore[arg-type]
                     advance_seconds=(1.0,), toxic={"type": "reset_peer"},
                     mode="sigkill" if kind == "journal_kill" else None,
                     retention_seconds=5.0 if kind == "retention_lapse" else None)
        fault = fault_of(spec)
        assert isinstance(fault, cls) and isinstance(fault, RowFault) and fault.spec is spec
        assert fault.kind == kind


@pytest.mark.parametrize("kind", ["proxy", "proxy_kill", "hold_kill_release", "retention_lapse"])
def test_the_fault_types_that_can_target_a_day(kind: str) -> None:
    fault = Fault(type=kind, rule={}, phase="request", target="seeded",  # type: ignore[arg-type]
                  retention_seconds=5.0 if kind == "retention_lapse" else None)
    assert target_day(dataclasses.replace(SEEDED, fault=fault), 3) == target_day(SEEDED, 3)


def _hold_entry(decision: str, forwarded: str, rule_id: str = "row-fault") -> dict[str, object]:
    return {"forwarded": forwarded, "faults": [{"rule_id": rule_id, "action": "hold", "phase": "request",
                                                "detail": {"hold_id": "h1", "decision": decision}}]}


def test_hold_kill_release_fired_only_when_the_released_request_reached_the_receiver() -> None:
    fault = fault_of(Fault(type="hold_kill_release"))
    ctx = FaultContext(row=SEEDED, proxy=None, receiver=None, seed=0)  # type: ignore[arg-type]
    assert fault.evidence(ctx, (), [_hold_entry("release", "yes")]).fired is False  # nothing was killed
    fault.killed_while_held = True  # type: ignore[attr-defined]
    delivered = fault.evidence(ctx, (), [_hold_entry("release", "yes")])
    assert delivered.fired is True and "released to the receiver" in delivered.detail
    for log in ([_hold_entry("release", "no")], [_hold_entry("release", "attempted")], [_hold_entry("cut", "yes")],
                [_hold_entry("release", "yes", rule_id="another")], []):
        lost = fault.evidence(ctx, (), log)
        assert lost.fired is False and "never reached the receiver" in lost.detail
