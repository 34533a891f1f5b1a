"""A private delivery deployment for the Airflow acceptance: the scenarios tree copied, its binding
pointed at the fault proxy, a year of synthetic measurements as the source (so every DAG run can
take its own three-day interval), and the journal locator the operator and trigger use.

One label in the source data is a sentinel: it must never appear in trigger kwargs, XCom, task logs,
trigger events or the journal (it reaches only the receiver, inside the sealed payload).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import yaml

from sink.airflow.locator import JournalLocator

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = "measurements-async"
FIRST_DAY = date(2026, 1, 1)
DAYS = 366
SENTINEL_ROW_LABEL = "sentinel-row-label-5c1d9e"
SENTINEL_TOKEN = "sentinel-token-a8b1c27e"  # noqa: S105 - a test sentinel, no credential
"""The receiver accepts any bearer token; this one must never be written anywhere."""


@dataclass(frozen=True, slots=True)
class Deployment:
    root: Path
    workload: Path
    locator: JournalLocator

    def scope(self, index: int) -> tuple[date, date]:
        """The ``index``-th three-day interval [from, to): one child of the async profile."""
        start = FIRST_DAY + timedelta(days=3 * index)
        return start, start + timedelta(days=3)


def _source_rows() -> str:
    lines = ["business_date,station_id,reading,label,valid,observed_at,sample_count"]
    for offset in range(DAYS):
        day = FIRST_DAY + timedelta(days=offset)
        for station in range(3):
            label = SENTINEL_ROW_LABEL if station == 1 else f"station-{station}"
            lines.append(f"{day.isoformat()},{station:05d},{offset % 97}.{station}25,{label},true,"
                         f"{day.isoformat()}T08:00:00Z,{station + 1}")
    return "\n".join(lines) + "\n"


def make_deployment(root: Path, *, proxy_url: str, journal: str | None = None,
                    pg_schema: str = "restproof_journal") -> Deployment:
    scenarios = root / "scenarios"
    for part in ("profiles", "bindings", "environments", "mappings", "workloads"):
        shutil.copytree(REPO / "scenarios" / part, scenarios / part, dirs_exist_ok=True)
    binding = scenarios / "bindings" / "mock_measurements.yaml"
    document = yaml.safe_load(binding.read_text(encoding="utf-8"))
    document["authority"] = proxy_url
    binding.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    (scenarios / "workloads" / "data" / "measurements.csv").write_text(_source_rows(), encoding="utf-8")
    state = root / "state"
    state.mkdir(parents=True, exist_ok=True)
    locator = JournalLocator(journal=journal or f"sqlite:{state / 'journal.sqlite3'}",
                             artifacts=str(state / "artifacts"), markers=str(state / "markers"), pg_schema=pg_schema)
    return Deployment(root, scenarios / "workloads" / f"{WORKLOAD}.yaml", locator)
