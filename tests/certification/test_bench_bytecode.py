"""The benches measure installed code: the sink's and the naive loop's modules are compiled before
anything is timed, and the artifact says whether they were."""

from __future__ import annotations

import pytest

from certification.bench import deliveries


def test_both_sides_of_the_pair_are_precompiled() -> None:
    from importlib.metadata import entry_points

    import certification.bench.naive_loop as loop

    (delivery,) = entry_points(group="console_scripts", name="delivery")  # the reference sink's command
    measured = {loop.__name__.partition(".")[0], delivery.module.partition(".")[0]}
    assert measured <= set(deliveries.MEASURED_PACKAGES), measured


def test_the_artifact_says_when_a_location_could_not_be_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, ...]] = []

    def partly(packages: tuple[str, ...]) -> int:
        calls.append(packages)
        return len(packages) - 1

    monkeypatch.setattr(deliveries, "precompile", partly)
    assert deliveries.precompile_measured_code().startswith("not all precompiled")
    monkeypatch.setattr(deliveries, "precompile", len)
    assert deliveries.precompile_measured_code().startswith("precompiled before measuring")
    assert calls == [deliveries.MEASURED_PACKAGES]
