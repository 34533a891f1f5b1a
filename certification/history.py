"""One row's history: what the sink, the proxy and the receiver each saw, merged on one timeline.

In the spirit of Jepsen: every mutation request is an operation with ``invoke`` and a completion
``ok`` / ``fail`` / ``info`` (indeterminate: the caller cannot know whether it took effect). The
checkers read only this history, so they judge any sink, the reference sink or a user's own.

A *delivery unit* is what one request is meant to apply once: the harness names it from the
dataset it handed the sink (the child's scope, or the digest of the rows it carries), never from
anything the sink chose, so a sink that sends no key at all is still judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from certification.canonical_json import canonical_bytes, sha256_hex


class Source(StrEnum):
    SINK = "sink"
    PROXY = "proxy"
    RECEIVER = "receiver"


class EventKind(StrEnum):
    INVOKE = "invoke"
    OK = "ok"
    FAIL = "fail"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class MutationRequest:
    """One mutation request as the proxy saw it (the proxy is the only neutral witness of the wire)."""

    seq: int
    at: float
    unit: str
    fence_key: str | None
    """The receiver-visible fence the sink sent (idempotency key, duplicate-key filename), if any."""
    bytes_from_sink: bool
    """The proxy received at least the request head: the sink cannot prove the request did not start."""
    forwarded: bool
    """The proxy forwarded it to the receiver (the receiver may have applied it)."""
    response_delivered: bool
    """The sink received a complete response."""
    fault: str | None = None


@dataclass(frozen=True, slots=True)
class AppliedEffect:
    """One effect in the receiver's ground-truth ledger."""

    seq: int
    at: float
    unit: str
    fence_key: str | None
    payload_digest: str
    rows: int


@dataclass(frozen=True, slots=True)
class SinkReport:
    """What the sink said: its exit code and, where it reports one, an outcome per delivery unit."""

    exit_code: int
    unit_outcomes: Mapping[str, str] = field(default_factory=dict)
    """unit -> ``completed`` | ``unknown`` | ``partial`` | ``failed`` | ``not_attempted``."""


@dataclass(frozen=True, slots=True)
class Event:
    at: float
    source: Source
    kind: EventKind
    unit: str
    detail: str


@dataclass(frozen=True, slots=True)
class History:
    row_id: str
    expected_units: Mapping[str, int]
    """unit -> rows the unit carries (what ground truth must show exactly once)."""
    requests: tuple[MutationRequest, ...]
    effects: tuple[AppliedEffect, ...]
    reports: tuple[SinkReport, ...]
    """One per sink process run (the first run, then every restart/recovery run)."""
    fenced_receiver: bool = False
    """The receiver personality certifiably deduplicates the fence the sink sends."""

    def events(self) -> tuple[Event, ...]:
        """The merged timeline: invoke/complete per request, one receiver event per effect."""
        merged: list[Event] = []
        for request in self.requests:
            merged.append(Event(request.at, Source.PROXY, EventKind.INVOKE, request.unit, f"request {request.seq}"))
            if request.response_delivered:
                kind = EventKind.OK
            elif request.forwarded or request.bytes_from_sink:
                kind = EventKind.INFO
            else:
                kind = EventKind.FAIL
            merged.append(Event(request.at, Source.PROXY, kind, request.unit, request.fault or "no fault"))
        merged.extend(
            Event(effect.at, Source.RECEIVER, EventKind.OK, effect.unit, f"effect {effect.seq}: {effect.rows} rows")
            for effect in self.effects
        )
        return tuple(sorted(merged, key=lambda event: (event.at, event.source.value)))

    def digest(self) -> str:
        return "sha256:" + sha256_hex(canonical_bytes(self.canonical()))

    def canonical(self) -> dict[str, object]:
        return {
            "row_id": self.row_id,
            "expected_units": dict(sorted(self.expected_units.items())),
            "requests": [_plain(_slots(r)) for r in self.requests],
            "effects": [_plain(_slots(e)) for e in self.effects],
            "reports": [{"exit_code": r.exit_code, "unit_outcomes": dict(sorted(r.unit_outcomes.items()))}
                        for r in self.reports],
            "fenced_receiver": self.fenced_receiver,
        }


def _slots(value: object) -> dict[str, object]:
    return {name: getattr(value, name) for name in getattr(value, "__slots__", ())}


def _plain(values: Mapping[str, object]) -> dict[str, object]:
    return {key: (round(value, 6) if isinstance(value, float) else value) for key, value in values.items()}


def units_of(requests: Iterable[MutationRequest]) -> set[str]:
    return {request.unit for request in requests}
