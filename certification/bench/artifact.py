"""The shared shape of every ``certify bench`` artifact: canonical, create-if-absent, signed.

``test_artifacts/connectors/rest/<name>_benchmark.json`` under the output directory, in the
envelope of the fault-matrix artifacts (schema id, producer, environment, creation time,
``content_digest``), plus:

* ``machine``: what the figures were measured on (CPUs, memory, load, kernel, Python);
* ``note``: absolute times on a shared 2-core machine are noise; ratios measured side by side in
  one run, and the correctness checks, are the evidence;
* ``ratios``: ``{name: {value, tolerance, better}}``, what ``certify gate`` compares;
* ``series``: plot data for the report page, ``{plot_id: {title, x_label, y_label,
  lines: {series name: [[x, y], ...]}}}`` (the exact shape ``certify report`` renders);
* ``checks``: the correctness results (``{name: {passed, detail}}``); a failed check makes the
  bench exit non-zero, a figure never does.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from certification import PRODUCER
from certification.artifacts import PRODUCER_VERSION, environment
from certification.canonical_json import canonical_bytes, with_content_digest
from certification.gate import ARTIFACTS
from certification.publish import publish_bytes
from certification.signing import build_test_result_predicate, generate_key, load_signer, sign_artifact

BENCH_SCHEMA = "restproof.bench.v1"
NOTE = ("absolute times on a shared 2-core machine are noise: only ratios measured side by side in this run, "
        "and the correctness checks, are evidence")
Better = Literal["higher", "lower"]


def machine() -> dict[str, Any]:
    """The host as the figures saw it; read from /proc where Linux offers it."""
    description: dict[str, Any] = {
        "cpus": os.cpu_count() or 0, "kernel": platform.release(), "python": platform.python_version(),
        "implementation": platform.python_implementation(), "load_average_1m": round(os.getloadavg()[0], 2),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                description["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                description["memory_mib"] = int(line.split()[1]) // 1024
                break
    except OSError:
        pass  # not Linux: the portable fields above still describe the host
    return description


@dataclass
class BenchResult:
    """What one bench measured; ``write`` turns it into the signed artifact."""

    name: str
    parameters: dict[str, Any]
    figures: dict[str, Any] = field(default_factory=dict)
    ratios: dict[str, dict[str, Any]] = field(default_factory=dict)
    series: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def ratio(self, name: str, value: float, *, tolerance: float, better: Better) -> None:
        self.ratios[name] = {"value": round(value, 4), "tolerance": tolerance, "better": better}

    def check(self, name: str, passed: bool, detail: str) -> None:
        self.checks[name] = {"passed": passed, "detail": detail}

    def plot(self, plot_id: str, *, title: str, x_label: str, y_label: str,
             lines: Mapping[str, Sequence[tuple[float, float]]]) -> None:
        self.series[plot_id] = {"title": title, "x_label": x_label, "y_label": y_label,
                                "lines": {name: [[x, y] for x, y in points] for name, points in lines.items()}}

    @property
    def passed(self) -> bool:
        return all(item["passed"] for item in self.checks.values())

    @property
    def failed_checks(self) -> list[str]:
        return [name for name, item in self.checks.items() if not item["passed"]]

    def body(self, created_at: str) -> dict[str, Any]:
        return with_content_digest({
            "schema_id": BENCH_SCHEMA, "producer": {"name": PRODUCER, "version": PRODUCER_VERSION},
            "environment": environment(), "created_at": created_at, "bench": self.name, "machine": machine(),
            "note": NOTE, "parameters": self.parameters, "figures": self.figures, "ratios": self.ratios,
            "series": self.series, "checks": self.checks, "verdict": "PASS" if self.passed else "FAIL",
        })


def artifact_path(out: Path, name: str) -> Path:
    return out / ARTIFACTS / f"{name}_benchmark.json"


def signing_key(out: Path, key: Path | None) -> Path:
    """The given private key, or the run's own key in ``OUT/keys`` (made once, reused by every bench)."""
    if key is not None:
        return key
    own = out / "keys" / "restproof-evidence.key"
    return own if own.exists() else generate_key(out / "keys").private


def write(out: Path, result: BenchResult, key: Path | None) -> Path:
    """Publish the artifact create-if-absent and sign it twice, as the fault matrix is signed."""
    path = artifact_path(out, result.name)
    created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    signer = load_signer(signing_key(out, key))
    publish_bytes(path, canonical_bytes(result.body(created)))
    passed = [name for name in result.checks if name not in result.failed_checks]
    sign_artifact(path, signer, predicate={"bench": result.name, "verdict": "PASS" if result.passed else "FAIL",
                                           "parameters": result.parameters},
                  test_result=build_test_result_predicate(
                      passed=result.passed, configuration=[{"name": k, "value": str(v)}
                                                           for k, v in sorted(result.parameters.items())],
                      passed_tests=passed, failed_tests=result.failed_checks))
    return path
