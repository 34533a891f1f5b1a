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


def _request(seq: int, at: float, unit: str = "u1", *, head: bool = True, forwarded: bool = True,
             delivered: bool = True, fault: str | None = None) -> dict[str, Any]:
    return {"seq": seq, "at": at, "unit": unit, "fence_key": None, "bytes_from_sink": head, "forwarded": forwarded,
            "response_delivered": delivered, "fault": fault}


def _history(requests: list[dict[str, Any]], effects: list[tuple[str, int]]) -> HistoryDoc:
    return HistoryDoc.model_validate({
        "row_id": "r", "expected_units": {"u1": 1}, "requests": requests,
        "effects": [{"seq": i, "at": float(i), "unit": unit, "fence_key": None, "payload_digest": "d", "rows": rows}
                    for i, (unit, rows) in enumerate(effects)],
        "reports": [{"exit_code": 0, "unit_outcomes": {}}],
    })


def _marks(history: HistoryDoc, lane: str) -> list[tuple[int, str]]:
    return [(m.slot, m.kind) for m in layout(history).marks if m.lane == lane]


def test_the_sink_lane_is_what_the_sink_could_know() -> None:
    history = _history([
        _request(1, 1.0, delivered=True),
        _request(2, 2.0, delivered=False, fault="close@response"),  # forwarded, response lost
        _request(3, 3.0, forwarded=False, delivered=False, fault="close@request"),  # head reached the proxy
        _request(4, 4.0, head=False, forwarded=False, delivered=False, fault="close@connect"),
    ], [])
    assert _marks(history, "sink") == [(0, "ok"), (1, "info"), (2, "info"), (3, "fail")]
    assert _marks(history, "proxy") == [(0, "ok"), (1, "ok"), (2, "fail"), (3, "fail")]
    labels = [m.label for m in layout(history).marks if m.lane == "proxy"]
    assert "not forwarded (close@request)" in labels[2] and "forwarded to the receiver" in labels[0]


def test_requests_are_ordered_by_the_proxy_clock_and_labelled_from_the_first() -> None:
    history = _history([_request(7, 12.5), _request(3, 10.0)], [])
    timeline = layout(history)
    sink = [m for m in timeline.marks if m.lane == "sink"]
    assert [m.label.split(" ")[1] for m in sink] == ["3", "7"]
    assert [label for _, label in timeline.ticks] == ["+0.00s", "+2.50s"]
    assert sink[1].x - sink[0].x == SLOT_WIDTH


def test_an_effect_sits_under_the_forwarded_request_of_its_unit_and_a_second_is_a_duplicate() -> None:
    history = _history([
        _request(1, 1.0, "u1", forwarded=False, delivered=False),
        _request(2, 2.0, "u2"),
        _request(3, 3.0, "u1"),
        _request(4, 4.0, "u1"),
    ], [("u2", 5), ("u1", 5), ("u1", 5), ("u1", 5)])
    receiver = _marks(history, "receiver")
    # u2 under slot 1; u1's effects under its forwarded requests (slots 2, 3), the third after the last
    assert receiver == [(1, "effect"), (2, "effect"), (3, "duplicate"), (4, "duplicate")]
    assert layout(history).slots == 5


def test_effects_on_one_slot_are_stacked_not_drawn_over_each_other() -> None:
    history = _history([_request(1, 1.0)], [("u9", 1), ("u9", 1)])
    receiver = [m for m in layout(history).marks if m.lane == "receiver"]
    assert [m.slot for m in receiver] == [1, 1] and receiver[0].y != receiver[1].y


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
