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
from urllib.parse import urlsplit

from certification.dataset import Dataset, RowKey, clipped_days, row_digest
from certification.history import DayState, Effect, Snapshot, WireRequest
from certification.http_framing import RawRequest
from certification.receiver_contract import ReceiverContract
from certification.wire_reader import read_request
from certification.wiretap import MAX_CONNECTION_BYTES, TappedConnection

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


def effects_of(ledger: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
               universe: Sequence[str] = ()) -> tuple[Effect, ...]:
    """Each ledger effect with the days its range covers (clipped to the universe and the range's ends
    for a range too long to list), or, without a range, the days its rows carry."""
    days_by_effect: dict[object, set[str]] = {}
    for row in rows:
        days_by_effect.setdefault(row.get("effect_id"), set()).add(str(row.get("row_date", ""))[:10])
    effects = []
    for index, effect in enumerate(ledger):
        start, end = effect.get("scope_start"), effect.get("scope_end")
        try:
            days = clipped_days(str(start), str(end), universe) if start and end else tuple(
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


def _pair_by_address(connections: Sequence[TappedConnection], proxy_log: Sequence[Mapping[str, Any]]
                     ) -> dict[tuple[int, int], Mapping[str, Any]]:
    """(connection, request index) -> its proxy entry, where the proxy saw the tap's own connection
    (HTTP/1.1 answers one request at a time, so the n-th request is the n-th entry)."""
    by_client: dict[str, list[Mapping[str, Any]]] = {}
    for logged in sorted(proxy_log, key=lambda item: int(item.get("seq", 0))):
        by_client.setdefault(str(logged.get("client", "")), []).append(logged)
    pairs = {}
    for connection in connections:
        entries = by_client.get(connection.upstream_local, [])
        for index in range(min(len(entries), len(connection.framer.requests))):
            pairs[(connection.connection_id, index)] = entries[index]
    return pairs


def _pair_by_content(pending: list[tuple[float, tuple[int, int], RawRequest]],
                     entries: Sequence[Mapping[str, Any]]) -> dict[tuple[int, int], Mapping[str, Any]]:
    """Where a TCP hop stands between the tap and the proxy, the proxy sees that hop's connections: pair
    each proxy entry with the earliest unpaired request of the same method, path and body digest (any
    body when the proxy never read one) that left the sink before the proxy saw it."""
    pairs: dict[tuple[int, int], Mapping[str, Any]] = {}
    free = sorted(pending, key=lambda item: item[0])
    for entry in sorted(entries, key=lambda item: int(item.get("seq", 0))):
        stamps = [value for value in (entry.get("timestamps") or {}).values() if isinstance(value, int | float)]
        seen_at = min(stamps) if stamps else float("inf")
        digest = entry.get("request_body_sha256")
        for position, (at, key, raw) in enumerate(free):
            if at > seen_at + _SLACK_S or raw.method.upper() != str(entry.get("method", "")).upper():
                continue
            if urlsplit(raw.target).path != entry.get("path"):
                continue
            if digest is not None and hashlib.sha256(bytes(raw.body)).hexdigest() != digest:
                continue
            pairs[key] = entry
            del free[position]
            break
    return pairs


def tap_overflowed(connections: Sequence[TappedConnection]) -> bool:
    """Did the tap keep only part of what a sink sent: a connection over its limit (the rest was relayed,
    never framed) or a body over the framer's? Requests it never recorded could be resends."""
    return any(connection.total_bytes > MAX_CONNECTION_BYTES
               or any(request.body_truncated for request in connection.framer.requests)
               for connection in connections)


def wire_requests(connections: Sequence[TappedConnection], proxy_log: Sequence[Mapping[str, Any]],
                  contract: ReceiverContract, windows: Sequence[RunWindow]) -> tuple[tuple[WireRequest, ...], int]:
    """The mutation requests on the wire, and how many proxy mutation entries no tapped request explains."""
    mutation_log = [entry for entry in proxy_log if str(entry.get("method", "")).upper() in MUTATING_METHODS]
    pairs = _pair_by_address(connections, proxy_log)
    paired_seqs = {int(entry.get("seq", -1)) for entry in pairs.values()}
    every: list[tuple[float, int, int, RawRequest, Any]] = [
        (connection.time_at(raw.start), connection.connection_id, index, raw, read_request(raw, contract))
        for connection in connections for index, raw in enumerate(connection.framer.requests)]
    found = [item for item in every if item[4].mutation]
    unpaired = [(at, (cid, index), raw) for at, cid, index, raw, _ in every if (cid, index) not in pairs]
    pairs.update(_pair_by_content(unpaired, [e for e in mutation_log if int(e.get("seq", -1)) not in paired_seqs]))
    marked = {(c.connection_id, index) for c in connections for index in c.marked}
    found.sort(key=lambda item: item[:3])
    requests = []
    for seq, (at, cid, index, raw, facts) in enumerate(found, start=1):
        entry = pairs.get((cid, index))
        requests.append(WireRequest(
            seq=seq, at=at, run=_run_of(at, windows), endpoint=facts.endpoint.value, method=facts.method,
            targets=None if facts.targets is None else tuple(sorted(facts.targets)),
            target_source=facts.target_source, fence=facts.fence, head_complete=raw.head_complete,
            body_complete=raw.body_complete,
            forwarded="unlogged" if entry is None else str(entry.get("forwarded", "no")),
            response_delivered=entry is not None and entry.get("phase") == "delivered",
            faults=_faults(entry), marked=(cid, index) in marked,
        ))
    explained = {int(entry.get("seq", -1)) for entry in pairs.values()}
    unexplained = sum(1 for entry in mutation_log if int(entry.get("seq", -1)) not in explained)
    return tuple(requests), unexplained
