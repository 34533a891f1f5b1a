"""Turn a run's evidence into the report page's view model, and render it (Jinja2, autoescaped).

Every string that reaches the page comes from an artifact and is hostile: the template escapes it.
Class names and anchors are never built from artifact strings: verdicts map through ``VERDICT_CSS``
(unknown ones to ``v-other``) and anchors are ``row-<index>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from jinja2 import DictLoader, Environment, StrictUndefined, select_autoescape

from certification.gate import GateResult
from certification.report.charts import Chart, chart, colours
from certification.report.evidence import HistoryDoc, LoadedHistory, MatrixRow, RunEvidence, RunReport, SinkCell
from certification.report.template import CSP, CSS, PAGE
from certification.report.timeline import LABEL_WIDTH, LANES, Timeline, lane_y, layout

VERDICT_CSS = {"PASS": "v-pass", "FAIL": "v-fail", "CAUGHT": "v-caught", "NOT_CAUGHT": "v-notcaught",
               "OBSERVED": "v-observed", "N/A": "v-na", "UNVERIFIED": "v-unverified"}
MAX_FAULT_TEXT = 300


@dataclass(frozen=True, slots=True)
class Cell:
    verdict: str
    css: str
    counters: str
    ending: str


@dataclass(frozen=True, slots=True)
class Part:
    """One sink's result on one row, with its timeline when its history is on disk."""

    sink: str
    role: str
    verdict: str
    css: str
    reasons: list[str]
    exit_codes: str
    ending: str
    fault: str
    timeline: Timeline | None
    runs: list[RunReport]
    history_note: str


def _css(verdict: str) -> str:
    return VERDICT_CSS.get(verdict, "v-other")


def _counters(cell: SinkCell) -> str:
    if cell.counters is None:
        return ""
    c = cell.counters
    return " ".join(f"{letter}{c.get(name, 0)}" for letter, name in (
        ("d", "duplicates"), ("f", "false_successes"), ("u", "unproved_resends"), ("l", "silent_losses"),
        ("o", "out_of_scope"), ("w", "wrong_content")))


def _fault(history: HistoryDoc | None) -> str:
    fault = None if history is None else history.fault
    if fault is None or fault.fired is None:
        return ""
    return ("fault fired: " if fault.fired else "FAULT NEVER FIRED: ") + fault.detail + (
        f" (target day {fault.target_day})" if fault.target_day else "")


def _history_note(loaded: LoadedHistory | None, cell: SinkCell) -> str:
    if loaded is None:
        return "no history on disk" if cell.history_digest else ""
    if loaded.history is None:
        return f"history unreadable: {loaded.problem}"
    return "history bound to the signed matrix" if loaded.bound else f"HISTORY NOT TRUSTED: {loaded.problem}"


def _part(row: MatrixRow, sink: str, cell: SinkCell, evidence: RunEvidence) -> Part:
    loaded = evidence.histories.get((row.row_id, sink))
    history = loaded.history if loaded is not None else None
    return Part(sink, cell.role, cell.verdict, _css(cell.verdict), cell.reasons,
                ", ".join(map(str, cell.exit_codes)) or "none", cell.ending or "", _fault(history),
                layout(history) if history is not None else None, history.runs if history is not None else [],
                _history_note(loaded, cell))


def _sinks(evidence: RunEvidence) -> list[str]:
    order = [evidence.summary.certified_sink]
    for row in evidence.matrix.rows:
        order.extend(sink for sink in row.sinks if sink not in order)
    return order


def _rows(evidence: RunEvidence, sinks: list[str]) -> list[dict[str, Any]]:
    rows = []
    for index, row in enumerate(evidence.matrix.rows):
        cells = [Cell(c.verdict, _css(c.verdict), _counters(c), c.ending or "" if c.role == "certified" else "")
                 if (c := row.sinks.get(s)) is not None else Cell("—", "v-missing", "", "") for s in sinks]
        fault = json.dumps(row.fault_plan, sort_keys=True)
        expect = ", ".join(row.expect.end) + (f" — {row.expect.why}" if row.expect.why else "")
        rows.append({"anchor": f"row-{index}", "row_id": row.row_id, "family": row.family, "expect": expect,
                     "seed_effect": row.seed_effect,
                     "fault": fault if len(fault) <= MAX_FAULT_TEXT else fault[:MAX_FAULT_TEXT] + "…",
                     "cells": cells,
                     "parts": [_part(row, s, row.sinks[s], evidence) for s in sinks if s in row.sinks]})
    return rows


def _benches(evidence: RunEvidence) -> list[dict[str, Any]]:
    benches = []
    palette = colours([line for bench in evidence.benches.values() for plot in bench.series.values()
                       for line in plot.lines])
    for name, bench in sorted(evidence.benches.items()):
        charts: list[Chart] = [chart(plot, palette) for _, plot in sorted(bench.series.items())]
        benches.append({"name": name, "charts": charts, "ratios": sorted(bench.ratios.items()),
                        "checks": sorted(bench.checks.items()), "verdict": bench.verdict,
                        "css": _css(bench.verdict), "note": bench.note})
    return benches


def trusted(evidence: RunEvidence) -> bool:
    """Every signature verifies, every artifact parses, every history on disk is the one signed."""
    histories_ok = all(loaded.bound for loaded in evidence.histories.values())
    return all(s.verified for s in evidence.signatures) and not evidence.problems and histories_ok


def _environment() -> Environment:
    return Environment(loader=DictLoader({"page.html": PAGE}), autoescape=select_autoescape(default=True),
                       undefined=StrictUndefined, trim_blocks=False, lstrip_blocks=False)


def render(evidence: RunEvidence, *, source: str, key: str, gate: GateResult | None) -> str:
    sinks = _sinks(evidence)
    summary = evidence.summary
    lanes = [(lane, lane_y(lane)) for lane in LANES]
    return _environment().get_template("page.html").render(
        csp=CSP, css=CSS, source=source, key=key, created_at=evidence.matrix.created_at,
        certified=summary.certified_sink, verdict=summary.verdict, valid=summary.valid,
        not_caught=summary.baseline_not_caught, trusted=trusted(evidence), sinks=sinks,
        endings=sorted(summary.endings.items()), unverified=summary.unverified_rows,
        space=summary.fault_space, seconds=summary.seconds,
        rows=_rows(evidence, sinks), legend=sorted(VERDICT_CSS.items()), gate=gate,
        signatures=evidence.signatures, problems=evidence.problems, benches=_benches(evidence),
        lanes=lanes, label_width=LABEL_WIDTH, airflow=evidence.airflow,
    )
