"""A throwaway scenarios tree for one bench run: a synthetic source sized on demand, a bench
profile and receiver personality with the payload limits the bench asks for, and a binding
pointed at the receiver under test.

The tree has the layout the compiler expects (``workloads/ profiles/ bindings/ mappings/
environments/``), so the sink under test is started exactly as a user starts it. The bench
profile is the bundled ``mock.json-batches@1`` with larger children (64 MB by default, what issue
9's RSS target names) and rate limits far above what one machine sends: the bench measures the
sink's own cost, not a vendor's quota.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import yaml

from sink.bounded_yaml import load_bounded_yaml_file

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
PROFILE_ID = "mock.bench-batches"
BINDING = "mock_measurements"
SCOPE_FROM = date(2026, 1, 1)
TOKEN_ENV = "MOCK_RECEIVER_TOKEN"  # noqa: S105 - the variable's name, not a secret
TOKEN = "restproof-bench-token"  # noqa: S105 - the local mock receiver's throwaway bench token
ROW_BYTES_ESTIMATE = 200
"""Decoded JSON bytes of one synthetic row, padding excluded, rounded up (used only to size days)."""


@dataclass(frozen=True, slots=True)
class SourceSize:
    rows: int
    days: int
    padding: int = 0

    @property
    def rows_per_day(self) -> int:
        return self.rows // self.days

    @property
    def total_rows(self) -> int:
        return self.rows_per_day * self.days

    @property
    def scope_to(self) -> date:
        return SCOPE_FROM + timedelta(days=self.days)


def size_for_rows(rows: int, child_bytes: int) -> SourceSize:
    """Whole days of at most ~half a child each, so every day fits one child with room to spare."""
    per_day_cap = max(1, child_bytes // (2 * ROW_BYTES_ESTIMATE))
    days = max(1, -(-rows // per_day_cap))
    return SourceSize(rows=rows, days=days)


def size_for_bytes(decoded_bytes: int, child_bytes: int, row_bytes: int = 4096) -> SourceSize:
    """A source of about ``decoded_bytes`` made of padded rows (cheap to generate, large to hold)."""
    rows = max(1, decoded_bytes // row_bytes)
    per_day_cap = max(1, child_bytes // (2 * row_bytes))
    days = max(1, -(-rows // per_day_cap))
    return SourceSize(rows=rows, days=days, padding=max(0, row_bytes - ROW_BYTES_ESTIMATE))


@dataclass(frozen=True, slots=True)
class Workspace:
    root: Path
    workload: Path
    bindings_dir: Path
    behaviour: Path
    size: SourceSize

    def values(self) -> dict[str, str]:
        """The sink contract's placeholders that depend on the workspace (docs/certification.md)."""
        return {"workload": str(self.workload), "scope_from": SCOPE_FROM.isoformat(),
                "scope_to": self.size.scope_to.isoformat(), "bindings_dir": str(self.bindings_dir)}


def _dump(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def bench_profile(child_bytes: int, max_rows: int) -> dict[str, Any]:
    profile: dict[str, Any] = load_bounded_yaml_file(SCENARIOS / "profiles" / "mock.json-batches@1.yaml")
    profile["id"] = PROFILE_ID
    profile["description"] = "Bench: mock synchronous JSON batches with large children and no vendor quota."
    profile["limits"] = {
        "max_rows": max_rows, "max_decoded_bytes": child_bytes, "planning_decoded_bytes": child_bytes * 7 // 8,
        "max_wire_bytes": child_bytes, "planning_wire_bytes": child_bytes * 7 // 8,
        "preferred_window_days": {"default": 1, "min": 1, "max": 2}, "max_in_flight_children": 1,
    }
    profile["rate_limits"] = {**profile["rate_limits"], "submit_per_minute": 100_000, "max_active_requests": 4}
    return profile


def bench_behaviour(child_bytes: int, max_rows: int, *, ledger_only: bool) -> dict[str, Any]:
    behaviour: dict[str, Any] = load_bounded_yaml_file(SCENARIOS / "receivers" / "json-batches.yaml")
    behaviour["name"] = "bench-batches"
    behaviour["limits"] = {"max_body_bytes": child_bytes, "max_decoded_bytes": child_bytes, "max_rows": max_rows}
    if ledger_only:
        behaviour["storage"] = "ledger_only"
    return behaviour


def build(root: Path, size: SourceSize, *, receiver_url: str, child_bytes: int = 64_000_000,
          max_rows: int = 1_000_000, ledger_only: bool = False) -> Workspace:
    """Write the tree under ``root``; ``receiver_url`` becomes the binding's authority."""
    for name in ("mappings", "environments"):
        shutil.copytree(SCENARIOS / name, root / name, dirs_exist_ok=True)
    _dump(root / "profiles" / f"{PROFILE_ID}@1.yaml", bench_profile(child_bytes, max_rows))
    point_binding(root / "bindings", receiver_url)
    behaviour = root / "receivers" / "bench-batches.yaml"
    _dump(behaviour, bench_behaviour(child_bytes, max_rows, ledger_only=ledger_only))
    workload = root / "workloads" / "bench.yaml"
    _dump(workload, {
        "logical_route_id": "measurements-bench-sync",
        "description": "Synthetic uniform measurements for certify bench.",
        "sink": {"type": "rest", "connection_ref": BINDING, "operation_profile_ref": f"{PROFILE_ID}@1",
                 "resource": "measurements",
                 "mutation": {"kind": "partition_replace", "generation_from": "scheduled_interval",
                              "scope": {"type": "inclusive_date_window", "source_field": "business_date"}},
                 "payload": {"mapping_ref": "mock.measurements.v1"}},
        "source": {"type": "synthetic", "seed": 20261201, "min_rows_per_day": size.rows_per_day,
                   "max_rows_per_day": size.rows_per_day, "distribution": "uniform", "padding": size.padding},
    })
    return Workspace(root, workload, root / "bindings", behaviour, size)


def point_binding(directory: Path, url: str) -> Path:
    """A bindings directory whose binding talks to ``url`` (the fault proxy in front of the receiver)."""
    binding = load_bounded_yaml_file(SCENARIOS / "bindings" / f"{BINDING}.yaml")
    binding["authority"] = url
    _dump(directory / f"{BINDING}.yaml", binding)
    return directory


def behaviour_only(root: Path, *, child_bytes: int = 64_000_000, max_rows: int = 1_000_000,
                   ledger_only: bool = False) -> Path:
    """The receiver personality alone (the receiver starts before its URL is known to the binding)."""
    path = root / "receivers" / "bench-batches.yaml"
    _dump(path, bench_behaviour(child_bytes, max_rows, ledger_only=ledger_only))
    return path
