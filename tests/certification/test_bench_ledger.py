"""Wrong results the benches must catch, judged from the receiver's ledger (fake receivers here),
and the process measurement they rely on."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from certification.bench import load, profile_split, workspace
from certification.bench.deliveries import DeliveryBench
from certification.bench.processes import Measured, run_measured
from certification.sinks import Invocation

CHILDREN = [{"scope_from": "2026-01-01", "scope_to": "2026-01-02", "rows": 5, "wire_bytes": 50},
            {"scope_from": "2026-01-02", "scope_to": "2026-01-03", "rows": 7, "wire_bytes": 70}]


@dataclass
class FakeReceiver:
    items: list[dict[str, Any]]

    def effects(self) -> list[dict[str, Any]]:
        return self.items


def _bench(effects: list[dict[str, Any]]) -> DeliveryBench:
    size = workspace.SourceSize(rows=12, days=2)
    space = workspace.Workspace(Path("/nonexistent"), Path("/nonexistent/w.yaml"), Path("/nonexistent/b"),
                                Path("/nonexistent/r.yaml"), size)
    export = Measured(0, "", 1.0, 0.5, 0.1, 50.0)
    return DeliveryBench(Path("/nonexistent"), FakeReceiver(effects),  # type: ignore[arg-type]
                         space=space, bundle_dir=Path("/nonexistent"), bundle={"children": CHILDREN},
                         bundle_export=export, bytecode="precompiled")


def _effect(start: str, end: str, rows: int, key: str | None = None) -> dict[str, Any]:
    return {"scope_start": start, "scope_end": end, "accepted_rows": rows, "idempotency_key": key}


GOOD = [_effect("2026-01-01", "2026-01-02", 5), _effect("2026-01-02", "2026-01-03", 7)]


def test_an_exact_delivery_passes_and_other_scopes_are_ignored() -> None:
    ok, detail = _bench([*GOOD, _effect("2026-09-01", "2026-09-04", 3, "load-1-1")]).ledger_check()
    assert ok, detail


@pytest.mark.parametrize(("effects", "words"), [
    (GOOD[:1], "missing=1"),
    ([*GOOD, GOOD[1]], "doubled=1"),
    ([GOOD[0], _effect("2026-01-02", "2026-01-03", 6)], "rows=11/12"),
])
def test_lost_doubled_or_short_deliveries_fail(effects: list[dict[str, Any]], words: str) -> None:
    ok, detail = _bench(effects).ledger_check()
    assert not ok and words in detail


def _keys(directory: Path, *files: list[str]) -> Path:
    directory.mkdir()
    for index, keys in enumerate(files):
        (directory / f"keys-{index}.txt").write_text("".join(key + "\n" for key in keys))
    return directory


def test_the_load_ledger_counts_lost_doubled_and_in_flight_keys(tmp_path: Path) -> None:
    keys = _keys(tmp_path / "k", ["load-1-0", "load-1-1"], ["load-2-0"])
    effects = [_effect("2026-09-01", "2026-09-04", 3, key) for key in ("load-1-0", "load-1-0", "load-2-0", "load-2-1")]
    ledger = load._check_ledger(_bench(effects), keys, users=2)
    assert ledger["lost"] == 1  # load-1-1 acknowledged, never applied
    assert ledger["doubled"] == 1  # load-1-0 applied twice
    assert ledger["in_flight_at_stop"] == 1  # load-2-1 applied, its answer never reached locust
    assert ledger["writers"] == 2


def test_peak_rss_and_cpu_are_the_measured_process_own(tmp_path: Path) -> None:
    ballast = bytearray(200 * 1024 * 1024)  # the harness is big: a child forked from it must not inherit that
    ballast[::4096] = b"y" * len(ballast[::4096])
    script = "import time; data = bytearray(160 * 1024 * 1024); data[::4096] = b'x' * len(data[::4096]); print('ok')"
    big = run_measured(Invocation((sys.executable, "-c", script), tmp_path / "big", {}), timeout=60)
    small = run_measured(Invocation((sys.executable, "-c", "print('ok')"), tmp_path / "small", {}), timeout=60)
    assert big.exit_code == 0 and big.stdout.strip() == "ok"
    assert big.peak_rss_mib > 150 and small.peak_rss_mib < 40  # not the harness copy a fork starts as
    failing = run_measured(Invocation((sys.executable, "-c", "raise SystemExit(3)"), tmp_path / "f", {}), timeout=60)
    assert failing.exit_code == 3
    assert len(ballast) > 0


def test_profile_areas() -> None:
    assert profile_split.area_of("/x/sink/journal/sqlite.py", "commit") == "journal"
    assert profile_split.area_of("~", "<method 'execute' of 'sqlite3.Connection' objects>") == "journal"
    assert profile_split.area_of("/v/site-packages/httpcore/_sync/http11.py", "_send") == "transport"
    assert profile_split.area_of("/x/sink/payload/summary_digest.py", "rows_digest") == "verification"
    assert profile_split.area_of("/x/typer/main.py", "main") == "startup"
    assert profile_split.area_of("/x/sink/runtime/supervisor.py", "<module>") == "startup"  # a module body
    assert profile_split.area_of("~", "<built-in method builtins.isinstance>") == profile_split.INHERIT
    assert profile_split.area_of("/usr/lib/python3.11/pathlib.py", "__truediv__") == profile_split.INHERIT


def test_certify_never_imports_locust() -> None:
    """Locust monkey-patches whatever process imports it; the benches run it in child processes."""
    import subprocess

    probe = "import sys, certification.cli, certification.bench.load; print('locust' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
