"""From what the tap, the proxy and the receiver recorded to a history: the receiver's rows decoded by
the harness's own reader of their documented encoding (cross-checked with the receiver's encoder),
content per day against the dataset (missing, surplus, foreign, outside the scope), effects and
their days, and the wire requests paired with the proxy's log by client address and order, placed
in run windows, with the log entries no recorded request explains counted."""

from __future__ import annotations

import base64
import hashlib
import struct
from typing import Any

import pytest

from certification import http_framing
from certification.dataset import read_dataset, row_digest
from certification.observe import (
    RowEncodingError,
    RunWindow,
    decode_row,
    effects_of,
    snapshot,
    tap_overflowed,
    wire_requests,
)
from certification.receiver_contract import read_contract
from certification.scenarios import BUNDLED
from certification.wiretap import MAX_CONNECTION_BYTES, TappedConnection
from mock_receiver.canonical import encode_row

DATASET = read_dataset(BUNDLED.parent / "workloads" / "measurements-sync.yaml", "2026-03-01", "2026-03-05")
CONTRACT = read_contract(BUNDLED.parent / "receivers" / "json-batches.yaml")
DAY1 = "2026-03-01"
# The first day's three rows as a sink delivering JSON leaves them (the receiver's value text).
SENT = [
    {"business_date": DAY1, "station_id": "00017", "reading": "12.500", "label": "Москва-Север", "valid": True,
     "observed_at": "2026-03-01T05:00:00.000000Z", "sample_count": 12},
    {"business_date": DAY1, "station_id": "00042", "reading": "-0.125", "label": "Zürich", "valid": False,
     "observed_at": "2026-03-01T06:30:00.000000Z", "sample_count": None},
    {"business_date": DAY1, "station_id": "00100", "reading": "3.000", "label": None, "valid": True,
     "observed_at": "2026-03-01T23:59:59.000000Z", "sample_count": 0},
]


def held(values: dict[str, Any], *, resource: str = "measurements", day: str | None = None,
         effect_id: object = 1, encoded: str | None = None) -> dict[str, Any]:
    """One row as ``GET /_admin/rows`` returns it."""
    return {"row_id": 0, "resource": resource, "row_date": day or str(values.get("business_date")),
            "effect_id": effect_id,
            "encoded": encoded if encoded is not None else base64.b64encode(encode_row(values)).decode()}


# --- the row encoding -----------------------------------------------------------------------------------


def frame(data: bytes) -> bytes:
    return struct.pack(">Q", len(data)) + data


def test_decode_row_reads_the_receivers_own_encoding() -> None:
    row = {"b": "x", "a": None, "c": 12, "d": True, "e": "", "f": "Zürich"}
    assert decode_row(encode_row(row)) == {"a": None, "b": "x", "c": "12", "d": "true", "e": "", "f": "Zürich"}
    assert decode_row(encode_row({})) == {}


def test_decode_row_by_the_documented_layout() -> None:
    encoded = struct.pack(">I", 2) + frame(b"k") + b"N" + frame(b"v") + b"S" + frame("é".encode())
    assert decode_row(encoded) == {"k": None, "v": "é"}


@pytest.mark.parametrize(("encoded", "problem"), [
    (b"", "no field count"),
    (b"\x00\x00\x01", "no field count"),
    (struct.pack(">I", 1), "truncated frame"),
    (struct.pack(">I", 1) + struct.pack(">Q", 5) + b"ab", "truncated frame"),
    (struct.pack(">I", 1) + frame(b"k") + b"S" + struct.pack(">Q", 2**40), "truncated frame"),
    (struct.pack(">I", 1) + frame(b"k") + b"X", "unknown value tag"),
    (struct.pack(">I", 1) + frame(b"k"), "unknown value tag"),
    (struct.pack(">I", 1) + frame(b"k") + b"N" + b"!", "trailing bytes"),
    (struct.pack(">I", 0) + b"x", "trailing bytes"),
    (struct.pack(">I", 2) + frame(b"k") + b"N", "truncated frame"),
])
def test_malformed_rows_are_refused(encoded: bytes, problem: str) -> None:
    with pytest.raises(RowEncodingError, match=problem):
        decode_row(encoded)


def test_text_that_is_not_utf8_is_an_error_the_snapshot_catches() -> None:
    with pytest.raises(UnicodeDecodeError):
        decode_row(struct.pack(">I", 1) + frame(b"k") + b"S" + frame(b"\xff"))


# --- content per day --------------------------------------------------------------------------------------


def _day(result: Any, day: str = DAY1) -> Any:
    state = result.day(day)
    assert state is not None
    return state


def test_the_exact_rows_in_another_encoding_are_correct() -> None:
    result = snapshot(2, [held(row) for row in SENT], [], DATASET)
    assert result.after_run == 2 and result.outside_rows == 0 and result.open_jobs == 0
    state = _day(result)
    assert (state.expected_rows, state.actual_rows, state.missing, state.surplus, state.foreign) == (3, 3, 0, 0, 0)
    assert state.correct and state.digest == row_digest(DATASET.rows_of(DAY1))
    assert [s.day for s in result.days] == list(DATASET.universe)
    other = _day(result, "2026-03-02")
    assert (other.expected_rows, other.actual_rows, other.missing) == (2, 0, 2) and not other.correct


def test_a_row_applied_twice_is_surplus() -> None:
    state = _day(snapshot(1, [held(row) for row in [*SENT, SENT[0], SENT[0]]], [], DATASET))
    assert (state.actual_rows, state.missing, state.surplus, state.foreign) == (5, 0, 2, 0)


def test_a_changed_value_is_foreign_and_leaves_its_row_missing() -> None:
    changed = [{**SENT[0], "reading": "12.501"}, *SENT[1:]]
    state = _day(snapshot(1, [held(row) for row in changed], [], DATASET))
    assert (state.actual_rows, state.missing, state.surplus, state.foreign) == (3, 1, 0, 1)


@pytest.mark.parametrize("row", [
    {**SENT[0], "extra": "x"},
    {key: value for key, value in SENT[0].items() if key != "valid"},
    {**SENT[0], "observed_at": "2026-03-01T05:00:00"},
])
def test_a_row_the_dataset_cannot_read_is_foreign(row: dict[str, Any]) -> None:
    state = _day(snapshot(1, [held(row), *(held(r) for r in SENT[1:])], [], DATASET))
    assert (state.missing, state.foreign) == (1, 1)


NOT_UTF8 = struct.pack(">I", 1) + frame(b"k") + b"S" + frame(b"\xff")


@pytest.mark.parametrize("encoded", ["not base64!", base64.b64encode(b"\x00").decode(),
                                     base64.b64encode(NOT_UTF8).decode(), ""])
def test_an_unreadable_encoding_is_foreign_never_an_error(encoded: str) -> None:
    state = _day(snapshot(1, [held(SENT[0], encoded=encoded), *(held(r) for r in SENT[1:])], [], DATASET))
    assert (state.actual_rows, state.missing, state.foreign) == (3, 1, 1)


def test_two_unreadable_rows_are_two_foreign_rows() -> None:
    rows = [held(SENT[0], encoded="!"), held(SENT[1], encoded="!")]
    assert _day(snapshot(1, rows, [], DATASET)).foreign == 2


def test_rows_outside_the_scope_or_of_another_resource_are_counted_outside() -> None:
    rows = [held(SENT[0], day="2026-03-05"), held(SENT[0], day="2026-02-28"), held(SENT[0], resource="events"),
            held(SENT[0], day="garbage"), {"resource": "measurements"}, *(held(r) for r in SENT)]
    result = snapshot(1, rows, [], DATASET)
    assert result.outside_rows == 5 and _day(result).correct


def test_a_row_date_with_a_time_is_its_day() -> None:
    assert _day(snapshot(1, [held(r, day=f"{DAY1}T00:00:00Z") for r in SENT], [], DATASET)).correct


def test_open_jobs_are_those_in_no_terminal_state() -> None:
    jobs = [{"state": state} for state in ("complete", "incomplete", "error", "cancelled", "running", "queued")]
    assert snapshot(0, [], [*jobs, {}], DATASET).open_jobs == 3


# --- effects ------------------------------------------------------------------------------------------------


def test_a_replacement_covers_its_range_and_an_append_the_days_its_rows_carry() -> None:
    ledger = [
        {"effect_id": 7, "resource": "measurements", "scope_start": "2026-03-01", "scope_end": "2026-03-03",
         "mutation_key": "k-1", "accepted_rows": 5},
        {"effect_id": 8, "resource": "events", "scope_start": None, "scope_end": None, "accepted_rows": 2},
        {"effect_id": "e9", "resource": "events", "scope_start": "bad", "scope_end": "2026-03-03",
         "idempotency_key": "k-2", "accepted_rows": None},
    ]
    rows = [held(SENT[0], effect_id=8, day="2026-03-04"), held(SENT[0], effect_id=8, day="2026-03-02T10:00:00Z"),
            held(SENT[0], effect_id=7)]
    first, second, third = effects_of(ledger, rows)
    assert (first.seq, first.resource, first.days, first.rows) == (7, "measurements", ("2026-03-01", "2026-03-02"), 5)
    assert (second.seq, second.days, second.fence, second.rows) == (8, ("2026-03-02", "2026-03-04"), None, 2)
    assert (third.seq, third.days, third.rows) == (2, (), 0)  # a range that is no range changes no known day
    assert first.fence is not None and first.fence.startswith("sha256:") and "k-1" not in first.fence
    assert third.fence is not None and third.fence != first.fence


def test_effect_fences_compare_by_value() -> None:
    def fence(**keys: object) -> str | None:
        return effects_of([{"effect_id": 1, "resource": "m", **keys}], [])[0].fence

    assert fence(mutation_key="a") == fence(idempotency_key="a") == fence(mutation_key="a", idempotency_key="b")
    assert fence(mutation_key="a") != fence(mutation_key="b")
    assert fence() is None and fence(mutation_key="") is None and fence(mutation_key=5) is None


# --- wire requests ------------------------------------------------------------------------------------------


def _http(target: str, *, method: str = "POST", body: bytes = b"[]", key: str | None = None) -> bytes:
    head = f"{method} {target} HTTP/1.1\r\nHost: r\r\n"
    if key is not None:
        head += f"Idempotency-Key: {key}\r\n"
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


SUBMIT = "/mock/v1/resources/measurements/batches?range_start=2026-03-01&range_end=2026-03-02"
SUBMIT2 = "/mock/v1/resources/measurements/batches?range_start=2026-03-02&range_end=2026-03-03"
POLL = "/mock/v1/resources/measurements/summary?range_start=2026-03-01&range_end=2026-03-02"


def connection(connection_id: int, upstream: str, *chunks: tuple[float, bytes], marked: set[int] | None = None
               ) -> TappedConnection:
    record = TappedConnection(connection_id, f"127.0.0.1:{5000 + connection_id}", upstream_local=upstream,
                              opened_at=chunks[0][0] if chunks else 0.0)
    for at, data in chunks:
        record.arrivals.append((record.total_bytes, at))
        record.total_bytes += len(data)
        record.framer.feed(data)
    record.marked = marked or set()
    return record


def entry(seq: int, client: str, *, method: str = "POST", forwarded: str = "yes", phase: str = "delivered",
          faults: list[Any] | None = None, **more: Any) -> dict[str, Any]:
    return {"seq": seq, "client": client, "method": method, "forwarded": forwarded, "phase": phase,
            "faults": faults or [], **more}


WINDOWS = [RunWindow(1, 10.0, 20.0), RunWindow(2, 30.0, 40.0)]


def test_requests_pair_with_the_proxys_entries_of_their_connection_in_order() -> None:
    first = _http(SUBMIT, key="k1")
    conns = [connection(0, "127.0.0.1:7001", (11.0, first), (12.0, _http(POLL, method="GET")),
                        (13.0, _http(SUBMIT2, key="k2")), marked={2}),
             connection(1, "127.0.0.1:7002", (31.0, _http(SUBMIT, key="k1")))]
    log = [entry(4, "127.0.0.1:7002", phase="response", faults=[{"action": "close", "phase": "response"}, "odd"]),
           entry(3, "127.0.0.1:7001", forwarded="no", phase="request_headers"),
           entry(1, "127.0.0.1:7001", faults=[{"action": "delay", "phase": "request"}]),
           entry(2, "127.0.0.1:7001", method="GET")]
    requests, unexplained = wire_requests(conns, log, CONTRACT, WINDOWS)
    assert unexplained == 0
    assert [(r.seq, r.at, r.run, r.targets) for r in requests] == [
        (1, 11.0, 1, ("2026-03-01",)), (2, 13.0, 1, ("2026-03-02",)), (3, 31.0, 2, ("2026-03-01",))]
    one, two, three = requests
    assert (one.forwarded, one.response_delivered, one.faults, one.marked) == ("yes", True, ("delay@request",), False)
    assert (two.forwarded, two.response_delivered, two.faults, two.marked) == ("no", False, (), True)
    assert (three.forwarded, three.response_delivered, three.faults) == ("yes", False, ("close@response",))
    assert one.endpoint == "sync_submit" and one.method == "POST" and one.target_source == "range"
    assert one.fence == three.fence != two.fence and one.head_complete and one.body_complete


def test_a_request_the_proxy_never_logged_is_unlogged() -> None:
    conns = [connection(0, "127.0.0.1:7001", (11.0, _http(SUBMIT)), (12.0, _http(SUBMIT2)))]
    requests, unexplained = wire_requests(conns, [entry(1, "127.0.0.1:7001")], CONTRACT, WINDOWS)
    assert [r.forwarded for r in requests] == ["yes", "unlogged"] and unexplained == 0
    assert not requests[1].response_delivered and requests[1].faults == ()


def test_entries_of_another_client_that_match_no_request_are_unexplained_mutations() -> None:
    conns = [connection(0, "127.0.0.1:7001", (11.0, _http(SUBMIT)))]
    log = [entry(1, "127.0.0.1:9999"), entry(2, "127.0.0.1:9999", method="GET"),
           entry(3, "127.0.0.1:9999", method="put"), entry(4, "127.0.0.1:9999", method="DELETE"),
           entry(5, "127.0.0.1:9999", method="PATCH")]
    requests, unexplained = wire_requests(conns, log, CONTRACT, WINDOWS)
    assert requests[0].forwarded == "unlogged" and unexplained == 4


def test_more_entries_than_recorded_requests_leave_the_rest_unexplained() -> None:
    conns = [connection(0, "127.0.0.1:7001", (11.0, _http(SUBMIT)))]
    log = [entry(1, "127.0.0.1:7001"), entry(2, "127.0.0.1:7001"), entry(3, "127.0.0.1:7001", method="GET")]
    assert wire_requests(conns, log, CONTRACT, WINDOWS)[1] == 1


def test_a_request_is_placed_in_the_run_whose_window_holds_its_first_byte() -> None:
    body = _http(SUBMIT)
    conns = [connection(0, "a", (9.96, body[:10]), (25.0, body[10:])),  # first byte within the slack before run 1
             connection(1, "b", (20.04, _http(SUBMIT))),  # within the slack after run 1
             connection(2, "c", (25.0, _http(SUBMIT))),  # between runs
             connection(3, "d", (29.9, _http(SUBMIT))),
             connection(4, "e", (45.0, _http(SUBMIT)))]
    requests, _ = wire_requests(conns, [], CONTRACT, WINDOWS)
    assert [(r.at, r.run) for r in requests] == [(9.96, 1), (20.04, 1), (25.0, 0), (29.9, 0), (45.0, 0)]


def test_requests_are_numbered_by_time_then_connection_then_order() -> None:
    conns = [connection(0, "a", (15.0, _http(SUBMIT) + _http(SUBMIT2))), connection(1, "b", (12.0, _http(SUBMIT2))),
             connection(2, "c", (15.0, _http(SUBMIT)))]
    requests, _ = wire_requests(conns, [], CONTRACT, WINDOWS)
    assert [(r.seq, r.at, r.targets) for r in requests] == [
        (1, 12.0, ("2026-03-02",)), (2, 15.0, ("2026-03-01",)), (3, 15.0, ("2026-03-02",)), (4, 15.0, ("2026-03-01",))]


def test_only_mutation_requests_enter_the_history_but_every_request_takes_its_entry() -> None:
    conns = [connection(0, "a", (11.0, _http(POLL, method="GET") + _http(SUBMIT)))]
    log = [entry(1, "a", method="GET", forwarded="no"), entry(2, "a", forwarded="attempted")]
    (request,), unexplained = wire_requests(conns, log, CONTRACT, WINDOWS)
    assert request.forwarded == "attempted" and unexplained == 0


def test_a_request_cut_in_its_head_keeps_what_it_showed() -> None:
    data = _http(SUBMIT, key="k1")
    conns = [connection(0, "a", (11.0, data[:data.index(b"Idempotency")]))]
    (request,), _ = wire_requests(conns, [entry(1, "a", forwarded="no", phase="request_headers")], CONTRACT, WINDOWS)
    assert not request.head_complete and not request.body_complete and request.fence is None
    assert request.targets == ("2026-03-01",)


def test_unknown_targets_stay_unknown() -> None:
    conns = [connection(0, "a", (11.0, _http("/mock/v1/resources/measurements/batches", body=b"x")))]
    (request,), _ = wire_requests(conns, [], CONTRACT, WINDOWS)
    assert request.targets is None and request.target_source == "unknown"


# --- through a TCP hop: the proxy sees the hop's connections, so entries pair by content -----------------------

BATCHES = "/mock/v1/resources/measurements/batches"


def hop_entry(seq: int, *, body: bytes | None = b"[]", at: float | None = 12.0, path: str = BATCHES,
              method: str = "POST", **more: Any) -> dict[str, Any]:
    return entry(seq, "127.0.0.1:8888", method=method, path=path,
                 request_body_sha256=None if body is None else hashlib.sha256(body).hexdigest(),
                 timestamps={} if at is None else {"request_headers": at, "request": at + 0.5}, **more)


def test_an_entry_of_another_client_pairs_with_the_request_of_the_same_method_path_and_body() -> None:
    conns = [connection(0, "127.0.0.1:7001", (11.0, _http(SUBMIT, body=b"[1]")), (11.5, _http(SUBMIT2, body=b"[2]")))]
    log = [hop_entry(1, body=b"[2]", forwarded="no", phase="request"), hop_entry(2, body=b"[1]", at=13.0)]
    (one, two), unexplained = wire_requests(conns, log, CONTRACT, WINDOWS)
    assert unexplained == 0
    assert (one.targets, one.forwarded, one.response_delivered) == (("2026-03-01",), "yes", True)
    assert (two.targets, two.forwarded, two.response_delivered) == (("2026-03-02",), "no", False)


def test_the_earliest_unpaired_request_that_left_before_the_proxy_saw_it_is_chosen() -> None:
    conns = [connection(0, "a", (11.0, _http(SUBMIT))), connection(1, "b", (12.0, _http(SUBMIT))),
             connection(2, "c", (20.0, _http(SUBMIT)))]
    log = [hop_entry(1, at=12.5, forwarded="no"), hop_entry(2, at=12.5, forwarded="attempted")]
    requests, unexplained = wire_requests(conns, log, CONTRACT, WINDOWS)
    assert [r.forwarded for r in requests] == ["no", "attempted", "unlogged"] and unexplained == 0


def test_a_request_that_left_after_the_proxy_saw_the_entry_is_not_its_request() -> None:
    conns = [connection(0, "a", (12.04, _http(SUBMIT)))]
    requests, unexplained = wire_requests(conns, [hop_entry(1, at=12.0)], CONTRACT, WINDOWS)
    assert requests[0].forwarded == "yes" and unexplained == 0  # within the slack
    conns = [connection(0, "a", (12.1, _http(SUBMIT)))]
    requests, unexplained = wire_requests(conns, [hop_entry(1, at=12.0)], CONTRACT, WINDOWS)
    assert requests[0].forwarded == "unlogged" and unexplained == 1


@pytest.mark.parametrize("changes", [{"body": b"[9]"}, {"path": "/mock/v1/dataset-jobs"}, {"method": "PUT"}])
def test_another_body_path_or_method_does_not_pair(changes: dict[str, Any]) -> None:
    conns = [connection(0, "a", (11.0, _http(SUBMIT)))]
    requests, unexplained = wire_requests(conns, [hop_entry(1, **changes)], CONTRACT, WINDOWS)
    assert requests[0].forwarded == "unlogged" and unexplained == 1


def test_an_entry_whose_body_the_proxy_never_read_pairs_with_any_body() -> None:
    conns = [connection(0, "a", (11.0, _http(SUBMIT, body=b"[42]")))]
    requests, unexplained = wire_requests(conns, [hop_entry(1, body=None, forwarded="no")], CONTRACT, WINDOWS)
    assert requests[0].forwarded == "no" and unexplained == 0


def test_an_entry_without_timestamps_pairs_whenever_the_request_left() -> None:
    conns = [connection(0, "a", (99.0, _http(SUBMIT)))]
    requests, unexplained = wire_requests(conns, [hop_entry(1, at=None)], CONTRACT, WINDOWS)
    assert requests[0].forwarded == "yes" and unexplained == 0


def test_a_request_paired_by_address_is_not_paired_again_by_content() -> None:
    conns = [connection(0, "127.0.0.1:7001", (11.0, _http(SUBMIT)))]
    log = [entry(1, "127.0.0.1:7001"), hop_entry(2)]
    requests, unexplained = wire_requests(conns, log, CONTRACT, WINDOWS)
    assert requests[0].forwarded == "yes" and unexplained == 1


def test_a_read_through_the_hop_is_never_unexplained() -> None:
    conns = [connection(0, "a", (11.0, _http(SUBMIT)))]
    requests, unexplained = wire_requests(conns, [hop_entry(1, method="GET", path=POLL.partition("?")[0])], CONTRACT,
                                          WINDOWS)
    assert requests[0].forwarded == "unlogged" and unexplained == 0


# --- what the tap could not keep -----------------------------------------------------------------------------


def test_a_tap_that_kept_everything_did_not_overflow() -> None:
    assert not tap_overflowed([connection(0, "a", (11.0, _http(SUBMIT))), connection(1, "b")])
    assert not tap_overflowed([])


def test_a_connection_over_the_taps_limit_overflowed() -> None:
    record = connection(0, "a", (11.0, _http(SUBMIT)))
    record.total_bytes = MAX_CONNECTION_BYTES
    assert not tap_overflowed([record])
    record.total_bytes = MAX_CONNECTION_BYTES + 1  # the rest was relayed but never framed
    assert tap_overflowed([connection(1, "b"), record])


def test_a_body_over_the_framers_limit_overflowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_framing, "MAX_BODY_BYTES", 3)
    assert tap_overflowed([connection(0, "a", (11.0, _http(SUBMIT) + _http(SUBMIT, body=b"[1, 2]")))])
