"""Lay one row's history out as a Jepsen-style timeline: a sink, a proxy and a receiver lane.

The wire tap is the only clock the whole history shares (receiver effects carry only their order),
so the axis is the order in which mutation requests left the sink, one slot each, labelled with the
time since the first request. Per request:

* sink lane — what the sink could know: ``ok`` it received a whole response; ``info`` its bytes
  left but no response came (it cannot know whether the request took effect); ``fail`` nothing
  reached the proxy;
* proxy lane — what the wire did: ``ok`` forwarded to the receiver, ``fail`` stopped (with the
  fault that fired, if one did);
* receiver lane — each ground-truth effect, under the earliest forwarded request not yet matched
  whose days overlap the effect's (an effect with no such request, such as a job settled later,
  goes after the last slot); an effect re-applying a day already applied is a duplicate and drawn
  as one.

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
    # Every request on the tap left the sink: without a whole response the sink cannot know the effect.
    return "ok" if request.response_delivered else "info"


def _forwarded(request: RequestRecord) -> bool:
    return request.forwarded in ("yes", "attempted")


def _days(days: list[str] | None) -> str:
    if days is None:
        return "unknown days"
    return days[0] if len(days) == 1 else f"{days[0]}..{days[-1]}" if days else "no day"


def _x(slot: int) -> float:
    return LABEL_WIDTH + slot * SLOT_WIDTH + SLOT_WIDTH / 2


def lane_y(lane: str, stack: int = 0) -> float:
    return TOP + LANES.index(lane) * LANE_HEIGHT + LANE_HEIGHT / 2 - stack * 4


def _request_label(request: RequestRecord, what: str) -> str:
    fence = f", fence {request.fence[:18]}" if request.fence else ", no fence"
    target = " · fault target" if request.marked else ""
    return f"request {request.seq} (run {request.run}) · {_days(request.targets)}{fence}{target} · {what}"


def layout(history: HistoryDoc) -> Timeline:
    requests = sorted(history.requests, key=lambda r: (r.at, r.seq))[:MAX_SLOTS]
    marks: list[Mark] = []
    t0 = requests[0].at if requests else 0.0
    open_forwards: list[tuple[int, set[str] | None]] = []
    for slot, request in enumerate(requests):
        kind = _sink_kind(request)
        sink_says = {"ok": "response received", "info": "sent, no response: effect unknown to the sink"}[kind]
        marks.append(Mark("sink", slot, kind, _request_label(request, sink_says), _x(slot), lane_y("sink")))
        fault = f" ({', '.join(request.faults)})" if request.faults else ""
        wire = "forwarded to the receiver" if _forwarded(request) else "not forwarded"
        marks.append(Mark("proxy", slot, "ok" if _forwarded(request) else "fail",
                          _request_label(request, wire + fault), _x(slot), lane_y("proxy")))
        if _forwarded(request):
            open_forwards.append((slot, None if request.targets is None else set(request.targets)))
    after_last = len(requests)
    applied: set[str] = set()
    stacked: dict[int, int] = {}
    for effect in history.effects:
        match = next((entry for entry in open_forwards if entry[1] is None or entry[1] & set(effect.days)), None)
        if match is not None:
            open_forwards.remove(match)
        slot = match[0] if match is not None else after_last
        kind = "duplicate" if applied & set(effect.days) else "effect"
        applied.update(effect.days)
        stack = stacked.get(slot, 0)
        stacked[slot] = stack + 1
        label = f"effect {effect.seq} · {_days(effect.days)} · {effect.rows} rows" + (
            " · DUPLICATE" if kind == "duplicate" else "")
        marks.append(Mark("receiver", slot, kind, label, _x(slot), lane_y("receiver", stack)))
    slots = after_last + (1 if after_last in stacked else 0)
    ticks = tuple((_x(slot), f"+{request.at - t0:.2f}s") for slot, request in enumerate(requests)
                  if slot % max(1, len(requests) // 10) == 0)
    width = LABEL_WIDTH + max(slots, 1) * SLOT_WIDTH + 20
    height = TOP + len(LANES) * LANE_HEIGHT + AXIS_HEIGHT
    return Timeline(tuple(marks), slots, len(requests), len(history.requests), ticks, width, height)
