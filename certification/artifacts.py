"""The certification artifacts (seed: "Artifacts and evidence", "Industrial differentiation
targets"): canonical JSON, create-if-absent, content-digested, then signed.

* ``remote_effect_fault_matrix.json``: every row, every sink side by side, counters, exit codes,
  history digest, seed and fault plan;
* ``certification_summary.json`` (``restproof.rest_sink_certification.v1``): totals per sink, the
  validity of the run (baselines caught where they must be), the verdict;
* ``junit.xml`` for CI dashboards (not signed: a view of the summary).
"""

from __future__ import annotations

import platform
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from certification import PRODUCER
from certification.canonical_json import canonical_bytes, with_content_digest
from certification.history_artifacts import write_histories
from certification.matrix import SinkRowResult
from certification.publish import publish_bytes
from certification.scenarios import Row

MATRIX_SCHEMA = "restproof.remote_effect_fault_matrix.v1"
IDENTITY_SCHEMA = "restproof.identity_conflict_matrix.v1"
SUMMARY_SCHEMA = "restproof.rest_sink_certification.v1"
PRODUCER_VERSION = "0.1.0"
CERTIFIED = frozenset({"PASS", "FAIL"})


@dataclass(frozen=True, slots=True)
class RowOutcome:
    row: Row
    results: tuple[SinkRowResult, ...]


def environment(worker_isolation: str = "fresh_process") -> dict[str, Any]:
    return {"python": platform.python_version(), "platform": sys.platform, "machine": platform.machine(),
            "worker_isolation": worker_isolation,
            "note": "absolute times on a shared machine are noise; counters and verdicts are the evidence"}


def _envelope(schema_id: str, body: dict[str, Any], created_at: str, isolation: str) -> dict[str, Any]:
    return with_content_digest({"schema_id": schema_id, "producer": {"name": PRODUCER, "version": PRODUCER_VERSION},
                                "environment": environment(isolation), "created_at": created_at, **body})


def matrix_body(outcomes: Sequence[RowOutcome], seed: int) -> dict[str, Any]:
    rows = []
    for outcome in outcomes:
        row = outcome.row
        rows.append({
            "row_id": row.row_id, "family": row.family, "seed": seed,
            "fault_plan": row.fault.model_dump(mode="json", exclude_none=True),
            "expect": row.expect.reference, "naive_duplicates_expected": list(row.naive_duplicates),
            "sinks": {r.sink: {"verdict": r.verdict, "counters": None if r.counters is None else r.counters.as_dict(),
                               "exit_codes": list(r.exit_codes), "history_digest": r.history_digest,
                               "reasons": list(r.reasons)} for r in outcome.results},
        })
    return {"rows": rows}


def summary_body(outcomes: Sequence[RowOutcome], certified: str) -> dict[str, Any]:
    totals: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        for result in outcome.results:
            entry = totals.setdefault(result.sink, {"rows": 0, "duplicates": 0, "false_successes": 0,
                                                    "unproved_resends": 0, "silent_losses": 0})
            if result.counters is None:
                continue
            entry["rows"] += 1
            for name, value in result.counters.as_dict().items():
                entry[name] += value
            entry[result.verdict.lower()] = entry.get(result.verdict.lower(), 0) + 1
    not_caught = [f"{o.row.row_id}:{r.sink}" for o in outcomes for r in o.results if r.verdict == "NOT_CAUGHT"]
    failed = [o.row.row_id for o in outcomes for r in o.results if r.sink == certified and r.verdict == "FAIL"]
    unverified = [o.row.row_id for o in outcomes for r in o.results
                  if r.sink == certified and r.verdict == "UNVERIFIED"]
    valid = not not_caught
    verdict = "INVALID" if not valid else "FAIL" if failed else "UNVERIFIED" if unverified else "PASS"
    return {"certified_sink": certified, "totals": totals, "valid": valid, "baseline_not_caught": not_caught,
            "failed_rows": failed, "unverified_rows": unverified, "verdict": verdict}


def identity_summary(identity: Mapping[str, Any]) -> dict[str, Any]:
    """The identity conflict matrix in the summary: its totals and whether every example passed."""
    totals = dict(identity["totals"])
    passed = totals["examples"] > 0 and totals["failed"] == 0
    return {**totals, "verdict": "PASS" if passed else "FAIL"}


def write_artifacts(out: Path, outcomes: Sequence[RowOutcome], *, seed: int, certified: str,
                    identity: Mapping[str, Any] | None = None, isolation: str = "fresh_process") -> dict[str, Path]:
    """``isolation``: how restarted workers ran (``network_namespace`` or ``fresh_process``)."""
    created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    base = out / "test_artifacts" / "connectors" / "rest"
    paths = {"matrix": base / "remote_effect_fault_matrix.json", "summary": base / "certification_summary.json"}
    publish_bytes(paths["matrix"], canonical_bytes(_envelope(MATRIX_SCHEMA, matrix_body(outcomes, seed), created,
                                                                 isolation)))
    summary = summary_body(outcomes, certified)
    if identity is not None:
        paths["identity"] = base / "identity_conflict_matrix.json"
        publish_bytes(paths["identity"], canonical_bytes(_envelope(IDENTITY_SCHEMA, {**identity, "seed": seed},
                                                                   created, isolation)))
        summary["identity_conflict"] = identity_summary(identity)
        if summary["verdict"] == "PASS" and summary["identity_conflict"]["verdict"] != "PASS":
            summary["verdict"] = "FAIL"
    publish_bytes(paths["summary"], canonical_bytes(_envelope(SUMMARY_SCHEMA, summary, created, isolation)))
    paths["junit"] = base / "junit.xml"
    publish_bytes(paths["junit"], junit(outcomes, certified))
    write_histories(base, outcomes)  # digest-bound to the matrix: `certify report` draws their timelines
    return paths


def junit(outcomes: Sequence[RowOutcome], certified: str) -> bytes:
    suite = ET.Element("testsuite", name=f"restproof certification: {certified}")
    failures = 0
    for outcome in outcomes:
        for result in outcome.results:
            if result.verdict == "N/A":
                continue
            case = ET.SubElement(suite, "testcase", classname=f"{outcome.row.family}.{result.sink}",
                                 name=outcome.row.row_id, time=f"{result.seconds:.3f}")
            if result.verdict in ("FAIL", "NOT_CAUGHT"):
                failures += 1
                ET.SubElement(case, "failure", message="; ".join(result.reasons) or result.verdict)
            elif result.verdict == "UNVERIFIED":
                ET.SubElement(case, "skipped", message="; ".join(result.reasons))
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(failures))
    data: bytes = ET.tostring(suite, encoding="utf-8", xml_declaration=True)
    return data
