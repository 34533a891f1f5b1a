"""Geometry for a generic SVG line chart of one bench plot (``series.<plot_id>`` of a
``*_benchmark.json``: ``title``, ``x_label``, ``y_label``, ``lines: {name: [[x, y], ...]}``).

Hand-written rather than matplotlib: the page needs a few polylines, ticks and a legend, drawn
the same way as the matrix and the timelines and escaped by the same template; matplotlib would
add a large dependency and inline SVGs whose glyph ids collide when several share one page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from certification.report.evidence import Plot

WIDTH, HEIGHT = 520, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 150, 20, 50
PALETTE = ("#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#5d4037", "#37474f")
MAX_POINTS = 2000
TICKS = 5


@dataclass(frozen=True, slots=True)
class Line:
    name: str
    colour: str
    points: str
    """The polyline's ``points`` attribute (numbers only)."""
    dots: tuple[tuple[float, float, str], ...]


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    x_label: str
    y_label: str
    lines: tuple[Line, ...]
    x_ticks: tuple[tuple[float, str], ...]
    y_ticks: tuple[tuple[float, str], ...]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    plot_width: int = WIDTH - LEFT - RIGHT
    plot_height: int = HEIGHT - TOP - BOTTOM


def _span(values: list[float]) -> tuple[float, float]:
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    if low == high:  # one point, or a flat line: give it a visible band
        pad = abs(low) * 0.1 or 1.0
        return low - pad, high + pad
    return low, high


def _ticks(low: float, high: float, to_pixel: float, origin: float, flip: bool) -> tuple[tuple[float, str], ...]:
    ticks = []
    for index in range(TICKS):
        value = low + (high - low) * index / (TICKS - 1)
        offset = (value - low) / (high - low) * to_pixel
        ticks.append((origin - offset if flip else origin + offset, f"{value:.4g}"))
    return tuple(ticks)


def colours(names: list[str]) -> dict[str, str]:
    """One colour per line name for the whole page: ``reference`` is the same colour in every chart."""
    return {name: PALETTE[index % len(PALETTE)] for index, name in enumerate(sorted(set(names)))}


def chart(plot: Plot, palette: Mapping[str, str] | None = None) -> Chart:
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    named = [(name, sorted(points)[:MAX_POINTS]) for name, points in sorted(plot.lines.items())]
    xs = [x for _, points in named for x, _ in points]
    ys = [y for _, points in named for _, y in points]
    x_low, x_high = _span(xs)
    y_low, y_high = _span(ys)
    y_low = min(y_low, 0.0) if all(y >= 0 for y in ys) else y_low  # rates and sizes start at zero

    def px(x: float) -> float:
        return round(LEFT + (x - x_low) / (x_high - x_low) * plot_width, 2)

    def py(y: float) -> float:
        return round(TOP + plot_height - (y - y_low) / (y_high - y_low) * plot_height, 2)

    palette = palette or colours([name for name, _ in named])
    lines = tuple(
        Line(name, palette.get(name, PALETTE[0]), " ".join(f"{px(x)},{py(y)}" for x, y in points),
             tuple((px(x), py(y), f"{name}: ({x:.6g}, {y:.6g})") for x, y in points))
        for name, points in named
    )
    return Chart(plot.title, plot.x_label, plot.y_label, lines,
                 _ticks(x_low, x_high, plot_width, LEFT, flip=False),
                 _ticks(y_low, y_high, plot_height, TOP + plot_height, flip=True))
