"""Turn what the wire tap, the proxy and the receiver recorded into one row's history.

* Requests: every request the tap recorded, read by ``wire_reader`` against the receiver's contract,
  paired with the proxy's log entry of the same connection (the proxy logs the tap's upstream
  address as its client; HTTP/1.1 answers one request at a time, so the n-th request of a connection
  is the n-th entry), and given to the run whose time window holds its first byte.
* Effects: the receiver's ledger, each with the days its range covers.
* Content: the rows the receiver holds (its documented ``mock-receiver.row.v1`` encoding, decoded
  here by the harness's own reader) against the dataset, per day: after every run, and settled.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from certification.dataset import Dataset, RowKey, day_range, row_digest
from certification.history import DayState, Effect, Snapshot, WireRequest
from certification.receiver_contract import ReceiverContract
from certification.wire_reader import read_request
from certification.wiretap import TappedConnection

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
TERMINAL_JOB_STATES = frozenset({"complete", "incomplete", "error", "cancelled"})
_SLACK_S = 0.05


class RowEncodingError(ValueError):
    """A row the receiver returned is not in its documented encoding."""


def decode_row(encoded: bytes) -> dict[str, str | None]:
    """``mock-receiver.row.v1``: 4-byte field count, then per key ``frame(key)`` and ``N`` or
    ``S`` + ``frame(text)``; ``frame(x)`` is an 8-byte big-endian length and ``x``."""
    def frame(at: int) -> tuple[bytes, int]:
        if at + 8 > len(encoded):
            raise RowEncodingError("truncated frame")
        (length,) = struct.unpack_from(">Q", encoded, at)
        end = at + 8 + length
        if end > len(encoded):
            raise RowEncodingError("truncated frame")
        return encoded[at + 8:end], end

    if len(encoded) < 4:
        raise RowEncodingError("no field count")
    (count,) = struct.unpack_from(">I", encoded, 0)
    at, row = 4, {}
    for _ in range(count):
        key, at = frame(at)
        tag = encoded[at:at + 1]
        if tag == b"N":
            value, at = None, at + 1
        elif tag == b"S":
            text, at = frame(at + 1)
            value = text.decode("utf-8")
        else:
            raise RowEncodingError("unknown value tag")
        row[key.decode("utf-8")] = value
    if at != len(encoded):
        raise RowEncodingError("trailing bytes")
    return row


_FOREIGN: RowKey = (("?", ("?", "unreadable")),)


def snapshot(after_run: int, rows: Sequence[Mapping[str, Any]], jobs: Sequence[Mapping[str, Any]],
             dataset: Dataset) -> Snapshot:
    actual: dict[str, Counter[RowKey]] = {day: Counter() for day in dataset.universe}
    outside = 0
    for row in rows:
        day = str(row.get("row_date", ""))[:10]
        if row.get("resource") != dataset.resource or day not in actual:
            outside += 1
            continue
        try:
            values = decode_row(base64.b64decode(str(row.get("encoded", "")), validate=True))
            key = dataset.receiver_row(values)
        except (RowEncodingError, binascii.Error, UnicodeDecodeError):
            key = None
        actual[day][key if key is not None else _FOREIGN] += 1
    states = []
    for day in dataset.universe:
        expected, held = dataset.rows_of(day), actual[day]
        foreign = sum(count for key, count in held.items() if key not in expected)
        surplus = sum(max(0, held[key] - count) for key, count in expected.items())
        missing = sum((expected - held).values())
        states.append(DayState(day, sum(expected.values()), sum(held.values()), missing, surplus, foreign,
                               row_digest(held)))
    open_jobs = sum(1 for job in jobs if job.get("state") not in TERMINAL_JOB_STATES)
    return Snapshot(after_run, tuple(states), outside, open_jobs)


def _fence_digest(value: object) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def effects_of(ledger: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> tuple[Effect, ...]:
    days_by_effect: dict[object, set[str]] = {}
    for row in rows:
        days_by_effect.setdefault(row.get("effect_id"), set()).add(str(row.get("row_date", ""))[:10])
    effects = []
    for index, effect in enumerate(ledger):
        start, end = effect.get("scope_start"), effect.get("scope_end")
        try:
            days = day_range(str(start), str(end)) if start and end else tuple(
                sorted(days_by_effect.get(effect.get("effect_id"), ())))
        except ValueError:
            days = ()
        raw_id = effect.get("effect_id")
        fence = _fence_digest(effect.get("mutation_key") or effect.get("idempotency_key"))
        effects.append(Effect(seq=raw_id if isinstance(raw_id, int) else index, resource=str(effect.get("resource")),
                              days=days, fence=fence, rows=int(effect.get("accepted_rows") or 0)))
    return tuple(effects)


@dataclass(frozen=True, slots=True)
class RunWindow:
    index: int
    started_at: float
    ended_at: float


def _run_of(at: float, windows: Sequence[RunWindow]) -> int:
    for window in windows:
        if window.started_at - _SLACK_S <= at <= window.ended_at + _SLACK_S:
            return window.index
    return 0


def _faults(entry: Mapping[str, Any] | None) -> tuple[str, ...]:
    notes = [] if entry is None else entry.get("faults") or []
    return tuple(f"{note.get('action')}@{note.get('phase')}" for note in notes if isinstance(note, dict))


def wire_requests(connections: Sequence[TappedConnection], proxy_log: Sequence[Mapping[str, Any]],
                  contract: ReceiverContract, windows: Sequence[RunWindow]) -> tuple[tuple[WireRequest, ...], int]:
    """The mutation requests on the wire, and how many proxy mutation entries no tapped request explains."""
    by_client: dict[str, list[Mapping[str, Any]]] = {}
    for logged in sorted(proxy_log, key=lambda item: int(item.get("seq", 0))):
        by_client.setdefault(str(logged.get("client", "")), []).append(logged)
    explained: set[int] = set()
    found: list[tuple[float, int, int, WireRequest]] = []
    for connection in connections:
        entries = by_client.get(connection.upstream_local, [])
        for index, raw in enumerate(connection.framer.requests):
            entry = entries[index] if index < len(entries) else None
            if entry is not None:
                explained.add(int(entry.get("seq", -1)))
            facts = read_request(raw, contract)
            if not facts.mutation:
                continue
            at = connection.time_at(raw.start)
            found.append((at, connection.connection_id, index, WireRequest(
                seq=0, at=at, run=_run_of(at, windows), endpoint=facts.endpoint.value, method=facts.method,
                targets=None if facts.targets is None else tuple(sorted(facts.targets)),
                target_source=facts.target_source, fence=facts.fence, head_complete=raw.head_complete,
                body_complete=raw.body_complete,
                forwarded="unlogged" if entry is None else str(entry.get("forwarded", "no")),
                response_delivered=entry is not None and entry.get("phase") == "delivered",
                faults=_faults(entry), marked=index in connection.marked,
            )))
    found.sort(key=lambda item: item[:3])
    requests = tuple(WireRequest(**{**_fields(request), "seq": seq + 1}) for seq, (*_, request) in enumerate(found))
    unexplained = sum(1 for entry in proxy_log if int(entry.get("seq", -1)) not in explained
                      and str(entry.get("method", "")).upper() in MUTATING_METHODS)
    return requests, unexplained


def _fields(request: WireRequest) -> dict[str, Any]:
    return {name: getattr(request, name) for name in request.__slots__}
