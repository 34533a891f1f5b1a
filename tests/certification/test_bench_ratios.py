"""The throughput and RSS benches compute their ratios, checks and plot series from the deliveries
they measured (fake deliveries here: the figures are chosen, so every ratio has one right value)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from certification.bench import rss, throughput
from certification.bench.deliveries import Delivery, DeliveryBench
from certification.bench.processes import Measured
from certification.sinks import bundled_sinks

ROWS = 1000


def _delivery(label: str, wall: float, cpu: float, rss_mib: float, ok: bool = True) -> Delivery:
    return Delivery(label, Measured(0, "", wall, cpu, 0.0, rss_mib), 0.5, ROWS, 2_000_000, ok,
                    "effects=1" if ok else "missing=1")


class FakeBench:
    """Deliveries with fixed wall times: reference delivery 2 s, naive loop 1 s, the sink's run 4 s."""

    def __init__(self, *, failing: str | None = None, scale: float = 1.0, children: int = 10) -> None:
        self.rows, self.wire_bytes = ROWS, 2_000_000
        self.bundle: dict[str, list[dict[str, Any]]] = {"children": [{}] * children}
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

    def reference_idle(self) -> Delivery:
        return self._make("reference-idle", 0.6, 0.4, 40.0)

    def naive_idle(self) -> Delivery:
        return self._make("naive-idle", 0.2, 0.15, 30.0)


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
    assert bench.order == ["sink", "reference-delivery", "reference-idle", "naive-idle", "naive-loop",
                           "naive-loop", "naive-idle", "reference-idle", "reference-delivery", "sink"]
    assert result.passed and len(result.checks) == 10
    figures = result.figures["by_rows"][str(ROWS)]
    # ten children: per child = (delivery - idle) / 10; (1.0 - 0.4) / (0.25 - 0.15) = 6
    assert figures["reference-delivery.fixed_cpu_s"] == 0.4 and figures["naive-loop.fixed_cpu_s"] == 0.15
    assert figures["reference-delivery.per_child_cpu_ms"] == 60.0 and figures["naive-loop.per_child_cpu_ms"] == 10.0
    assert figures["per_child_cpu_ratio"] == 6.0
    assert "reference-idle.rows_per_s" not in figures  # an idle run's only figures are its times
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


def _cpu_runs(reference: list[float], loop: list[float], idle: tuple[float, float]) -> dict[str, list[Delivery]]:
    return {"reference-delivery": [_delivery("reference-delivery", 1.0, cpu, 50.0) for cpu in reference],
            "naive-loop": [_delivery("naive-loop", 1.0, cpu, 50.0) for cpu in loop],
            "reference-idle": [_delivery("reference-idle", 1.0, idle[0], 50.0)],
            "naive-idle": [_delivery("naive-idle", 1.0, idle[1], 50.0)]}


def test_the_cpu_split_pairs_rounds_and_takes_each_sides_fixed_cost_off() -> None:
    # rounds: 3.0 / 1.0, 2.0 / 1.0, 4.5 / 1.5: paired 3.0, 2.0, 3.0; the ratio of medians would be 3.0 too
    split = throughput.cpu_split(_cpu_runs([3.0, 2.0, 4.5], [1.0, 1.0, 1.5], (0.5, 0.25)), children=10)
    assert (split["reference-delivery.paired_cpu_ratio.min"], split["reference-delivery.paired_cpu_ratio.median"],
            split["reference-delivery.paired_cpu_ratio.max"]) == (2.0, 3.0, 3.0)
    assert split["reference-delivery.per_child_cpu_ms"] == 250.0  # (3.0 - 0.5) / 10
    assert split["naive-loop.per_child_cpu_ms"] == 75.0  # (1.0 - 0.25) / 10
    assert split["per_child_cpu_ratio"] == round(250 / 75, 3)


def test_a_loop_whose_idle_costs_as_much_as_its_delivery_gives_no_per_child_ratio() -> None:
    split = throughput.cpu_split(_cpu_runs([2.0], [0.5], (1.0, 0.5)), children=4)
    assert split["naive-loop.per_child_cpu_ms"] == 0.0 and "per_child_cpu_ratio" not in split


def test_a_sink_other_than_the_reference_gets_no_idle_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bench = FakeBench()
    _patch(monkeypatch, throughput, [bench])
    other = bundled_sinks()["reference"].model_copy(update={"name": "other"})
    result = throughput.run(other, sizes=[ROWS], rounds=1, work=tmp_path, profile=False)
    assert bench.order == ["sink", "naive-loop"]
    assert "per_child_cpu_ratio" not in result.figures["by_rows"][str(ROWS)]


class _Receiver:
    def __init__(self, effects: list[dict[str, Any]]) -> None:
        self._effects = effects

    def effects(self) -> list[dict[str, Any]]:
        return self._effects


@pytest.mark.parametrize(("effects", "ok"), [([], True), ([{"scope_start": "2026-01-01"}], False)])
def test_the_idle_loops_ground_truth_is_an_untouched_ledger(effects: list[dict[str, Any]], ok: bool) -> None:
    bench = object.__new__(DeliveryBench)
    bench.receiver = _Receiver(effects)  # type: ignore[assignment]
    assert bench._ledger_empty() == (ok, f"effects={len(effects)} (none expected)")


def test_too_few_children_for_a_split_get_no_idle_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bench = FakeBench(children=throughput.MIN_SPLIT_CHILDREN - 1)
    _patch(monkeypatch, throughput, [bench])
    result = throughput.run(bundled_sinks()["reference"], sizes=[ROWS], rounds=1, work=tmp_path, profile=False)
    assert bench.order == ["sink", "reference-delivery", "naive-loop"]
    assert "per_child_cpu_ratio" not in result.figures["by_rows"][str(ROWS)]
