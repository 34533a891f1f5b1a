"""The throughput and RSS benches compute their ratios, checks and plot series from the deliveries
they measured (fake deliveries here: the figures are chosen, so every ratio has one right value)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from certification.bench import rss, throughput
from certification.bench.deliveries import Delivery
from certification.bench.processes import Measured
from certification.sinks import bundled_sinks

ROWS = 1000


def _delivery(label: str, wall: float, cpu: float, rss_mib: float, ok: bool = True) -> Delivery:
    return Delivery(label, Measured(0, "", wall, cpu, 0.0, rss_mib), 0.5, ROWS, 2_000_000, ok,
                    "effects=1" if ok else "missing=1")


class FakeBench:
    """Deliveries with fixed wall times: reference delivery 2 s, naive loop 1 s, the sink's run 4 s."""

    def __init__(self, *, failing: str | None = None, scale: float = 1.0) -> None:
        self.rows, self.wire_bytes = ROWS, 2_000_000
        self.bundle: dict[str, list[dict[str, Any]]] = {"children": [{}]}
        self.bundle_export = Measured(0, "", 3.0, 2.0, 0.0, 60.0)
        self.failing, self.scale = failing, scale
        self.order: list[str] = []
        self.bytecode = "precompiled before measuring"

    def _make(self, label: str, wall: float, cpu: float, rss_mib: float) -> Delivery:
        self.order.append(label)
        return _delivery(label, wall, cpu, rss_mib * self.scale, ok=label != self.failing)

    def sink(self, spec: Any) -> Delivery:
        return self._make("sink", 4.0, 3.0, 100.0)

    def reference_delivery_only(self, profile: Path | None = None) -> Delivery:
        return self._make("reference-delivery", 2.0, 1.0, 80.0)

    def naive(self, mode: str) -> Delivery:
        return self._make(f"naive-{mode}", 1.0, 0.25, 200.0)


def _patch(monkeypatch: pytest.MonkeyPatch, module: Any, benches: list[FakeBench],
           child_bytes: list[object] | None = None) -> None:
    @contextmanager
    def fake(*args: object, **kwargs: object) -> Iterator[FakeBench]:
        assert kwargs.get("ledger_only") is True  # both benches measure the sink, not the receiver's row store
        if child_bytes is not None:
            child_bytes.append(kwargs.get("child_bytes"))
        yield benches.pop(0)

    monkeypatch.setattr(module, "delivery_bench", fake)


def test_throughput_ratios_checks_and_alternating_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bench = FakeBench()
    _patch(monkeypatch, throughput, [bench])
    result = throughput.run(bundled_sinks()["reference"], sizes=[ROWS], rounds=2, work=tmp_path, profile=False)
    assert result.ratios["delivery_rows_per_s"]["value"] == 0.5  # 500 rows/s vs 1000 rows/s
    assert result.ratios["delivery_sink_cpu"]["value"] == 4.0  # 1 s vs 0.25 s
    assert result.ratios["end_to_end_rows_per_s"]["value"] == 1.0  # 4 s vs 3 s export + 1 s loop
    assert result.ratios["delivery_rows_per_s"]["better"] == "higher"
    assert bench.order == ["sink", "reference-delivery", "naive-loop", "naive-loop", "reference-delivery", "sink"]
    assert result.passed and len(result.checks) == 6
    assert result.parameters["bytecode"] == "precompiled before measuring"  # the artifact says how code ran
    lines = result.series["throughput_rows_per_s"]["lines"]
    assert lines["naive-loop"] == [[1000.0, 1000.0]] and lines["reference-delivery"] == [[1000.0, 500.0]]


def test_small_children_reach_the_workspace_and_the_artifact(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    seen: list[object] = []
    _patch(monkeypatch, throughput, [FakeBench()], seen)
    result = throughput.run(bundled_sinks()["reference"], sizes=[ROWS], rounds=1, work=tmp_path, profile=False,
                            child_bytes=60_000)
    assert seen == [60_000] and result.parameters["child_bytes"] == 60_000


def test_a_wrong_delivery_fails_the_throughput_bench(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _patch(monkeypatch, throughput, [FakeBench(failing="naive-loop")])
    result = throughput.run(bundled_sinks()["reference"], sizes=[ROWS], rounds=1, work=tmp_path, profile=False)
    assert result.failed_checks == ["1000.naive-loop.0"]


def test_rss_ratios_over_two_sizes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _patch(monkeypatch, rss, [FakeBench(), FakeBench(scale=1.5)])
    result = rss.run(bundled_sinks()["reference"], decoded_bytes=[2_000_000, 8_000_000], work=tmp_path)
    assert result.ratios["sink_large_over_small"]["value"] == 1.5  # 150 MiB vs 100 MiB
    assert result.ratios["sink_over_naive_large"]["value"] == 0.5  # 150 MiB vs 300 MiB
    assert result.parameters["bytecode"] == "precompiled before measuring"
    assert result.series["rss_peak_mib"]["lines"]["naive-read-all"] == [[2.0, 200.0], [8.0, 300.0]]
    assert result.passed


def test_rss_needs_two_sizes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="two source sizes"):
        rss.run(bundled_sinks()["reference"], decoded_bytes=[2_000_000], work=tmp_path)
