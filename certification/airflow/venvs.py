"""One fresh virtual environment per Airflow version: Airflow, the HTTP provider (a baseline), the
PostgreSQL drivers Airflow's metadata database needs, and this project's sink (``--no-deps``, then
only the libraries the sink imports, so that Airflow's own pins are never moved).

Airflow publishes constraint files for reproducible installs; they are not reachable from here, so
the few libraries whose newest releases break an older Airflow are pinned below, each found by
running that Airflow (the pin is the newest release that works).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SINK_RUNTIME_LIBRARIES = ("pydantic>=2.6,<3", "PyYAML>=6.0", "jsonschema>=4.21", "httpx>=0.27", "httpcore>=1.0.9",
                          "psycopg[binary]>=3.1", "psycopg-pool>=3.2", "typer>=0.12")
# The newest FastAPI releases fail Airflow 3's execution API at import (a discriminated union of
# callables); 0.156.0 is the newest release that Airflow 3.2.2 starts with. Airflow 3.2.2 was
# accepted with pydantic 2.12.5, the pin keeps its environment the one the evidence was made in.
PINS: dict[tuple[int, int], tuple[str, ...]] = {
    (3, 0): ("fastapi<=0.156.0",),
    (3, 1): ("fastapi<=0.156.0",),
    (3, 2): ("fastapi<=0.156.0", "pydantic<=2.12.5"),
    (3, 3): ("fastapi<=0.156.0",),
}
LATEST_PATCHES = ("2.10.5", "2.11.2", "3.0.6", "3.1.8", "3.2.2", "3.3.2")


class VenvFailed(RuntimeError):
    """An Airflow environment could not be built (a package index problem, a resolver conflict)."""


@dataclass(frozen=True, slots=True)
class AirflowVenv:
    path: Path
    airflow_version: str

    @property
    def minor(self) -> tuple[int, int]:
        major, minor = self.airflow_version.split(".")[:2]
        return int(major), int(minor)

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


def minor_of(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _pip(venv: Path, *args: str, log: Path) -> None:
    with log.open("ab") as handle:
        done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *args],
                              stdout=handle, stderr=subprocess.STDOUT, check=False, timeout=3600)
    if done.returncode != 0:
        raise VenvFailed(f"pip install {' '.join(args)[:120]} exited {done.returncode} (see {log})")


def build_venv(directory: Path, airflow_version: str, *, reuse: bool = True) -> AirflowVenv:
    """Create (or reuse, when it already holds this Airflow and the sink) the environment."""
    venv = AirflowVenv(directory, airflow_version)
    marker = directory / "restproof-airflow-ready"
    if reuse and marker.exists() and marker.read_text().strip() == airflow_version:
        _pip(directory, "--no-deps", "-e", str(REPO), log=directory / "install.log")  # the current sink
        return venv
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "install.log"
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(directory)], check=True, timeout=600)
    drivers = ["psycopg2-binary"] + (["asyncpg"] if minor_of(airflow_version) >= (3, 0) else [])
    _pip(directory, f"apache-airflow=={airflow_version}", "apache-airflow-providers-http", *drivers,
         *PINS.get(minor_of(airflow_version), ()), log=log)
    _pip(directory, "--no-deps", "-e", str(REPO), log=log)
    _pip(directory, *SINK_RUNTIME_LIBRARIES, *PINS.get(minor_of(airflow_version), ()), log=log)
    marker.write_text(airflow_version)
    return venv
