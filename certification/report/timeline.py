"""Lay one row's history out as a Jepsen-style timeline: a sink, a proxy and a receiver lane.

The proxy is the only clock the whole history shares (receiver effects carry only their order),
so the axis is the order in which the proxy saw mutation requests, one slot each, labelled with
the proxy's time since the first request. Per request:

* sink lane — what the sink could know: ``ok`` it received a whole response; ``info`` its bytes
  left but no response came (it cannot know whether the request took effect); ``fail`` nothing
  reached the proxy;
* proxy lane — what the wire did: ``ok`` forwarded to the receiver, ``fail`` stopped (with the
  fault that fired, if one did);
* receiver lane — each ground-truth effect, under the earliest forwarded request of its unit not
  yet matched (an effect with no such request, such as a job settled later, goes after the last
  slot); an effect beyond the first for its unit is a duplicate and drawn as one.

Pure geometry: the page template draws it, and escapes every string it shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from certification.report.evidence import HistoryDoc, RequestRecord

MAX_SLOTS = 200
"""A longer history is cut here (and the page says so): a picture of 10,000 requests shows nothing."""
LANES = ("sink", "proxy", "receiver")
LABEL_WIDTH = 80
SLOT_WIDTH = 46
LANE_HEIGHT = 34
TOP = 8
AXIS_HEIGHT = 30


@dataclass(frozen=True, slots=True)
class Mark:
    lane: str
    slot: int
    kind: str
    """ok / fail / info for operations; effect / duplicate on the receiver lane."""
    label: str
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Timeline:
    marks: tuple[Mark, ...]
    slots: int
    shown_requests: int
    total_requests: int
    ticks: tuple[tuple[float, str], ...]
    width: int
    height: int

    @property
    def truncated(self) -> bool:
        return self.shown_requests < self.total_requests


def _sink_kind(request: RequestRecord) -> str:
    if request.response_delivered:
        return "ok"
    return "info" if request.bytes_from_sink or request.forwarded else "fail"


def _x(slot: int) -> float:
    return LABEL_WIDTH + slot * SLOT_WIDTH + SLOT_WIDTH / 2


def lane_y(lane: str, stack: int = 0) -> float:
    return TOP + LANES.index(lane) * LANE_HEIGHT + LANE_HEIGHT / 2 - stack * 4


def _request_label(request: RequestRecord, what: str) -> str:
    fence = f", fence {request.fence_key}" if request.fence_key else ""
    return f"request {request.seq} · unit {request.unit}{fence} · {what}"


def layout(history: HistoryDoc) -> Timeline:
    requests = sorted(history.requests, key=lambda r: (r.at, r.seq))[:MAX_SLOTS]
    marks: list[Mark] = []
    t0 = requests[0].at if requests else 0.0
    open_forwards: dict[str, list[int]] = {}
    for slot, request in enumerate(requests):
        kind = _sink_kind(request)
        sink_says = {"ok": "response received", "info": "sent, no response: effect unknown to the sink",
                     "fail": "nothing reached the proxy"}[kind]
        marks.append(Mark("sink", slot, kind, _request_label(request, sink_says), _x(slot), lane_y("sink")))
        fault = f" ({request.fault})" if request.fault else ""
        wire = "forwarded to the receiver" if request.forwarded else "not forwarded"
        marks.append(Mark("proxy", slot, "ok" if request.forwarded else "fail",
                          _request_label(request, wire + fault), _x(slot), lane_y("proxy")))
        if request.forwarded:
            open_forwards.setdefault(request.unit, []).append(slot)
    after_last = len(requests)
    seen_units: set[str] = set()
    stacked: dict[int, int] = {}
    for effect in history.effects:
        candidates = open_forwards.get(effect.unit, [])
        slot = candidates.pop(0) if candidates else after_last
        kind = "duplicate" if effect.unit in seen_units else "effect"
        seen_units.add(effect.unit)
        stack = stacked.get(slot, 0)
        stacked[slot] = stack + 1
        label = f"effect {effect.seq} · unit {effect.unit} · {effect.rows} rows" + (
            " · DUPLICATE" if kind == "duplicate" else "")
        marks.append(Mark("receiver", slot, kind, label, _x(slot), lane_y("receiver", stack)))
    slots = after_last + (1 if after_last in stacked else 0)
    ticks = tuple((_x(slot), f"+{request.at - t0:.2f}s") for slot, request in enumerate(requests)
                  if slot % max(1, len(requests) // 10) == 0)
    width = LABEL_WIDTH + max(slots, 1) * SLOT_WIDTH + 20
    height = TOP + len(LANES) * LANE_HEIGHT + AXIS_HEIGHT
    return Timeline(tuple(marks), slots, len(requests), len(history.requests), ticks, width, height)
