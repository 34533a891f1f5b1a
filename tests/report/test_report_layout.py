"""Timeline and chart geometry: each lane says what its witness saw, effects sit under the request
that caused them, duplicates are marked, long histories are cut visibly, and plots stay inside
their axes with zero at the bottom for rates and sizes."""

from __future__ import annotations

from typing import Any

import pytest

from certification.report.charts import HEIGHT, LEFT, RIGHT, TOP, WIDTH, chart, colours
from certification.report.evidence import HistoryDoc, Plot
from certification.report.timeline import MAX_SLOTS, SLOT_WIDTH, layout

BOTTOM_Y = HEIGHT - 50


def _request(seq: int, at: float, days: tuple[str, ...] | list[str] | None = ("d1",), *,
             forwarded: str = "yes", delivered: bool = True,
             faults: tuple[str, ...] = (), fence: str | None = None, marked: bool = False, run: int = 1
             ) -> dict[str, Any]:
    return {"seq": seq, "at": at, "run": run, "targets": None if days is None else list(days), "fence": fence,
            "forwarded": forwarded, "response_delivered": delivered, "faults": list(faults), "marked": marked}


def _history(requests: list[dict[str, Any]], effects: list[tuple[list[str], int]]) -> HistoryDoc:
    return HistoryDoc.model_validate({
        "row_id": "r", "universe": ["d1", "d2"], "requests": requests,
        "effects": [{"seq": i, "days": days, "fence": None, "rows": rows} for i, (days, rows) in enumerate(effects)],
        "runs": [{"index": 1, "kind": "first", "exit_code": 0, "claims": {}}],
    })


def _marks(history: HistoryDoc, lane: str) -> list[tuple[int, str]]:
    return [(m.slot, m.kind) for m in layout(history).marks if m.lane == lane]


def test_the_sink_lane_is_what_the_sink_could_know() -> None:
    history = _history([
        _request(1, 1.0, delivered=True),
        _request(2, 2.0, delivered=False, faults=("close@response",)),  # forwarded, response lost
        _request(3, 3.0, forwarded="no", delivered=False, faults=("close@request",)),  # the proxy read its head
        _request(4, 4.0, forwarded="unlogged", delivered=False),  # left the sink; the proxy logged nothing
        _request(5, 5.0, forwarded="attempted", delivered=False),
    ], [])
    # Every request the tap recorded left the sink: without a whole response its effect is unknown to it.
    assert _marks(history, "sink") == [(0, "ok"), (1, "info"), (2, "info"), (3, "info"), (4, "info")]
    assert _marks(history, "proxy") == [(0, "ok"), (1, "ok"), (2, "fail"), (3, "fail"), (4, "ok")]
    labels = [m.label for m in layout(history).marks if m.lane == "proxy"]
    assert "not forwarded (close@request)" in labels[2] and "forwarded to the receiver" in labels[0]
    assert labels[1].endswith("forwarded to the receiver (close@response)")


def test_a_request_label_names_its_run_days_fence_and_target() -> None:
    history = _history([_request(1, 1.0, ["d1", "d2", "d3"], fence="sha256:" + "a" * 40, marked=True, run=2),
                        _request(2, 2.0, [], run=2), _request(3, 3.0, None)], [])
    sink = [m.label for m in layout(history).marks if m.lane == "sink"]
    assert sink[0].startswith("request 1 (run 2) · d1..d3, fence sha256:aaaaaaaaaaa · fault target · ")
    assert sink[1].startswith("request 2 (run 2) · no day, no fence · ")
    assert sink[2].startswith("request 3 (run 1) · unknown days, no fence · ")


def test_requests_are_ordered_by_the_tap_clock_and_labelled_from_the_first() -> None:
    history = _history([_request(7, 12.5), _request(3, 10.0)], [])
    timeline = layout(history)
    sink = [m for m in timeline.marks if m.lane == "sink"]
    assert [m.label.split(" ")[1] for m in sink] == ["3", "7"]
    assert [label for _, label in timeline.ticks] == ["+0.00s", "+2.50s"]
    assert sink[1].x - sink[0].x == SLOT_WIDTH


def test_an_effect_sits_under_the_forwarded_request_for_its_days_and_a_second_is_a_duplicate() -> None:
    history = _history([
        _request(1, 1.0, ["d1"], forwarded="no", delivered=False),
        _request(2, 2.0, ["d2"]),
        _request(3, 3.0, ["d1"]),
        _request(4, 4.0, ["d1"]),
    ], [(["d2"], 5), (["d1"], 5), (["d1"], 5), (["d1"], 5)])
    receiver = _marks(history, "receiver")
    # d2 under slot 1; d1's effects under its forwarded requests (slots 2, 3), the third after the last
    assert receiver == [(1, "effect"), (2, "effect"), (3, "duplicate"), (4, "duplicate")]
    assert layout(history).slots == 5


def test_a_request_of_unknown_days_may_have_caused_any_effect() -> None:
    history = _history([_request(1, 1.0, None)], [(["d2"], 1)])
    assert _marks(history, "receiver") == [(0, "effect")]


def test_effects_on_one_slot_are_stacked_not_drawn_over_each_other() -> None:
    history = _history([_request(1, 1.0)], [(["d9"], 1), (["d9"], 1)])
    receiver = [m for m in layout(history).marks if m.lane == "receiver"]
    assert [m.slot for m in receiver] == [1, 1] and receiver[0].y != receiver[1].y
    assert [m.kind for m in receiver] == ["effect", "duplicate"] and receiver[1].label.endswith("DUPLICATE")


def test_a_long_history_is_cut_and_says_so() -> None:
    history = _history([_request(i, float(i)) for i in range(MAX_SLOTS + 5)], [])
    timeline = layout(history)
    assert timeline.truncated and timeline.shown_requests == MAX_SLOTS
    assert timeline.total_requests == MAX_SLOTS + 5
    assert not layout(_history([_request(1, 1.0)], [])).truncated


def test_an_empty_history_still_has_a_drawable_size() -> None:
    timeline = layout(_history([], []))
    assert timeline.marks == () and timeline.width > 0 and timeline.height > 0


def _plot(lines: dict[str, list[tuple[float, float]]]) -> Plot:
    return Plot(title="t", x_label="x", y_label="y", lines=lines)


def test_points_map_into_the_plot_area_in_order_with_zero_at_the_bottom() -> None:
    c = chart(_plot({"a": [(1.0, 10.0), (0.25, 5.0)], "b": [(0.25, 40.0), (1.0, 20.0)]}))
    dots = {line.name: [(x, y) for x, y, _ in line.dots] for line in c.lines}
    a, b = dots["a"], dots["b"]
    assert a[0][0] == LEFT and a[1][0] == WIDTH - RIGHT  # x sorted, from the left edge to the right
    assert b[0][1] == TOP  # the largest y at the top
    assert a[0][1] == pytest.approx(TOP + (BOTTOM_Y - TOP) * (1 - 5 / 40))  # y from zero, not from 5
    assert c.y_ticks[0] == (BOTTOM_Y, "0") and c.y_ticks[-1] == (TOP, "40")
    assert c.lines[0].points == " ".join(f"{x},{y}" for x, y in a)
    assert c.lines[0].colour != c.lines[1].colour


def test_a_single_point_and_negative_values_do_not_break_the_scale() -> None:
    single = chart(_plot({"a": [(2.0, 3.0)]}))
    ((x, y, label),) = single.lines[0].dots
    assert LEFT <= x <= WIDTH - RIGHT and TOP <= y <= BOTTOM_Y and label == "a: (2, 3)"
    negative = chart(_plot({"a": [(0.0, -4.0), (1.0, -2.0)]}))
    ys = [y for _, y, _ in negative.lines[0].dots]
    assert ys == [BOTTOM_Y, TOP]  # no zero forced in for a negative series


def test_a_line_keeps_its_colour_across_charts() -> None:
    palette = colours(["sink", "naive", "reference", "naive"])
    first = chart(_plot({"reference": [(1.0, 1.0)], "naive": [(1.0, 2.0)]}), palette)
    second = chart(_plot({"reference": [(1.0, 1.0)], "sink": [(1.0, 2.0)]}), palette)
    assert first.lines[1].colour == second.lines[0].colour == palette["reference"]
    assert len(set(palette.values())) == 3
