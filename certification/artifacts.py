"""The certification artifacts (seed: "Artifacts and evidence", "Industrial differentiation
targets"): canonical JSON, create-if-absent, content-digested, then signed.

* ``remote_effect_fault_matrix.json``: every row, every sink side by side, counters, exit codes,
  history digest, seed and fault plan;
* ``certification_summary.json`` (``restproof.rest_sink_certification.v2``): totals per sink, the
  validity of the run (baselines caught where they must be), endings, the verdict;
* ``junit.xml`` for CI dashboards (not signed: a view of the summary).
"""

from __future__ import annotations

import platform
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from certification import PRODUCER
from certification.canonical_json import canonical_bytes, with_content_digest
from certification.history_artifacts import write_histories
from certification.publish import publish_bytes
from certification.verdicts import FAIL, NOT_CAUGHT, UNVERIFIED, RowOutcome, SinkRowResult, run_summary

MATRIX_SCHEMA = "restproof.remote_effect_fault_matrix.v2"
IDENTITY_SCHEMA = "restproof.identity_conflict_matrix.v1"
SUMMARY_SCHEMA = "restproof.rest_sink_certification.v2"
PRODUCER_VERSION = "0.2.0"


def environment(worker_isolation: str = "fresh_process", journal: Mapping[str, str] | None = None
                ) -> dict[str, Any]:
    """``journal``: the journal the sink under test used (backend and who provided it), on runs."""
    return {"python": platform.python_version(), "platform": sys.platform, "machine": platform.machine(),
            "worker_isolation": worker_isolation, **({} if journal is None else {"journal": dict(journal)}),
            "note": "absolute times on a shared machine are noise; counters and verdicts are the evidence"}


def _envelope(schema_id: str, body: dict[str, Any], created_at: str, isolation: str,
              journal: Mapping[str, str] | None = None) -> dict[str, Any]:
    return with_content_digest({"schema_id": schema_id, "producer": {"name": PRODUCER, "version": PRODUCER_VERSION},
                                "environment": environment(isolation, journal), "created_at": created_at, **body})


def _sink_entry(result: SinkRowResult) -> dict[str, Any]:
    history = result.history
    return {
        "role": result.role, "verdict": result.verdict,
        "counters": None if result.counters is None else result.counters.as_dict(),
        "exit_codes": list(result.exit_codes), "history_digest": result.history_digest,
        "ending": None if result.ending is None else result.ending.value,
        "fault_fired": None if history is None else history.fault.fired,
        "checks": {check.name: check.status.value for check in result.checks},
        "reasons": list(result.reasons),
    }


def _seed_effect(outcome: RowOutcome) -> str:
    """What the seed changed on this row (``--seed`` must change something, or say it changes nothing)."""
    fault = outcome.row.fault
    if fault.target == "seeded":
        days = {r.history.fault.target_day for r in outcome.results if r.history is not None}
        return f"picks the target day ({', '.join(sorted(d for d in days if d))})"
    rule = fault.rule or {}
    if fault.type == "proxy" and rule.get("fire") == "probability":
        return "draws the proxy rule's probability decisions"
    return "nothing: the fault is deterministic on this row"


def matrix_body(outcomes: Sequence[RowOutcome], seed: int) -> dict[str, Any]:
    rows = []
    for outcome in outcomes:
        row = outcome.row
        rows.append({
            "row_id": row.row_id, "family": row.family, "seed": seed, "seed_effect": _seed_effect(outcome),
            "fault_plan": row.fault.model_dump(mode="json", exclude_none=True),
            "expect": {"end": [end.value for end in row.expect.end], "why": row.expect.why},
            "caught_duplicating_expected": list(row.caught_duplicating),
            "sinks": {result.sink: _sink_entry(result) for result in outcome.results},
        })
    return {"rows": rows}


def summary_body(outcomes: Sequence[RowOutcome], certified: str) -> dict[str, Any]:
    return run_summary(outcomes, certified)


def identity_summary(identity: Mapping[str, Any]) -> dict[str, Any]:
    """The identity conflict matrix in the summary: its totals and whether every example passed."""
    totals = dict(identity["totals"])
    passed = totals["examples"] > 0 and totals["failed"] == 0
    return {**totals, "verdict": "PASS" if passed else "FAIL"}


def write_artifacts(out: Path, outcomes: Sequence[RowOutcome], *, seed: int, certified: str,
                    identity: Mapping[str, Any] | None = None, isolation: str = "fresh_process",
                    run_facts: Mapping[str, Any] | None = None, journal: Mapping[str, str] | None = None
                    ) -> dict[str, Path]:
    """``isolation``: how restarted workers ran (``network_namespace`` or ``fresh_process``);
    ``run_facts``: what the summary states about the run as a whole (fault-space coverage, time);
    ``journal``: the journal the sink under test used (``environment.journal`` of the matrix and summary)."""
    created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    base = out / "test_artifacts" / "connectors" / "rest"
    paths = {"matrix": base / "remote_effect_fault_matrix.json", "summary": base / "certification_summary.json"}
    publish_bytes(paths["matrix"], canonical_bytes(_envelope(MATRIX_SCHEMA, matrix_body(outcomes, seed), created,
                                                                 isolation, journal)))
    summary = {**summary_body(outcomes, certified), **(run_facts or {})}
    if identity is not None:
        paths["identity"] = base / "identity_conflict_matrix.json"
        publish_bytes(paths["identity"], canonical_bytes(_envelope(IDENTITY_SCHEMA, {**identity, "seed": seed},
                                                                   created, isolation)))
        summary["identity_conflict"] = identity_summary(identity)
        if summary["verdict"] == "PASS" and summary["identity_conflict"]["verdict"] != "PASS":
            summary["verdict"] = "FAIL"
    publish_bytes(paths["summary"], canonical_bytes(_envelope(SUMMARY_SCHEMA, summary, created, isolation,
                                                                 journal)))
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
            if result.verdict in (FAIL, NOT_CAUGHT):
                failures += 1
                ET.SubElement(case, "failure", message="; ".join(result.reasons) or result.verdict)
            elif result.verdict == UNVERIFIED:
                ET.SubElement(case, "skipped", message="; ".join(result.reasons))
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(failures))
    data: bytes = ET.tostring(suite, encoding="utf-8", xml_declaration=True)
    return data
