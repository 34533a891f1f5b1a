"""Build a signed `certify run` output directory for the report tests, through the real writers.

Rows are real catalog rows (one renamed to a hostile id); results carry real ``History`` objects,
so ``write_artifacts`` writes the matrix, the summary, the junit file and the per-row histories
exactly as ``certify run`` does; the matrix and summary are then signed as ``certify run`` signs
them. A bench artifact in the shape ``certify bench`` writes is added on request.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from certification.artifacts import write_artifacts
from certification.canonical_json import canonical_bytes, with_content_digest
from certification.checkers import Counters, check_all
from certification.gate import ARTIFACTS
from certification.history import (
    DayState,
    Effect,
    FaultEvidence,
    History,
    Run,
    RunKind,
    Snapshot,
    WireRequest,
)
from certification.publish import publish_bytes
from certification.scenarios import bundled_rows
from certification.signing import build_test_result_predicate, generate_key, load_signer, sign_artifact
from certification.verdicts import RowOutcome, SinkRowResult

HOSTILE = '<script>window.__pwned = 1</script><img src="http://127.0.0.1:9/x.png">'
SINKS = ("reference", "naive-retry", "naive-idempotency-key")
DAY = "2026-03-01"


def _request(seq: int, at: float, *, delivered: bool, faults: tuple[str, ...] = ()) -> WireRequest:
    return WireRequest(seq=seq, at=at, run=1, endpoint="sync_submit", method="POST", targets=(DAY,),
                       target_source="range", fence="sha256:k-1", head_complete=True, body_complete=True,
                       forwarded="yes", response_delivered=delivered, faults=faults)


def history(row_id: str, sink: str, *, duplicate: bool) -> History:
    """A cut after commit: the first request is forwarded and its response lost; a resend with the same
    fence follows; ``duplicate``: the receiver applied the day twice."""
    effects = [Effect(1, "measurements", (DAY,), "sha256:k-1", 3)]
    if duplicate:
        effects.append(Effect(2, "measurements", (DAY,), None, 3))
    state = DayState(DAY, 3, 3, 0, 0, 0, "sha256:rows")
    return History(
        row_id=row_id, sink=sink, universe=(DAY,), expected_digest="sha256:expected",
        mutation_kind="partition_replace", fence_deduplicates=True,
        requests=(_request(1, 100.0, delivered=False, faults=("close@response",)),
                  _request(2, 101.5, delivered=True)),
        effects=tuple(effects), snapshots=(Snapshot(1, (state,), 0, 0), Snapshot(0, (state,), 0, 0)),
        runs=(Run(1, RunKind.FIRST, 0, False, 99.0, 102.0, {DAY: "completed"}),),
        fault=FaultEvidence("proxy", True, "the proxy rule fired 1 time(s)", DAY),
    )


def _result(row_id: str, sink: str, verdict: str, *, duplicate: bool, reasons: tuple[str, ...] = ()) -> SinkRowResult:
    h = history(row_id, sink, duplicate=duplicate)
    checks = check_all(h)
    role = "certified" if sink == "reference" else "baseline"
    return SinkRowResult(sink, role, verdict, Counters.of(checks), (0,), h.digest(), 0.1, reasons, h, h.ending(),
                         checks)


def outcomes(*, hostile: bool, failing: bool) -> list[RowOutcome]:
    rows = [row for row in bundled_rows() if row.row_id.startswith("sync.")][:3]
    if hostile:
        rows[2] = dataclasses.replace(rows[2], row_id=HOSTILE)
    built = []
    for index, row in enumerate(rows):
        fails = failing and index == 1
        reference = _result(row.row_id, "reference", "FAIL" if fails else "PASS", duplicate=fails,
                            reasons=(f"duplicates = 1 {HOSTILE}",) if fails else ())
        retry = _result(row.row_id, "naive-retry", "CAUGHT", duplicate=True)
        keyed = _result(row.row_id, "naive-idempotency-key", "OBSERVED", duplicate=False)
        built.append(RowOutcome(row, (reference, retry, keyed)))
    return built


def bench_document() -> dict[str, Any]:
    return {
        "schema_id": "restproof.benchmark.v1",
        "series": {"rss_over_size": {"title": f"peak RSS {HOSTILE}", "x_label": "decoded source (GB)",
                                     "y_label": "peak RSS (MB)",
                                     "lines": {"reference": [[0.25, 61.0], [1.0, 64.5]],
                                               "naive": [[0.25, 410.0], [1.0, 1580.0]]}}},
        "ratios": {"naive_over_reference_rss_1gb": {"value": 24.5, "tolerance": 0.2, "better": "higher"}},
        "checks": {"ledger_matches": {"passed": True, "detail": "nothing lost, nothing doubled"},
                   "rss_bounded": {"passed": False, "detail": f"1 GB source above bound {HOSTILE}"}},
        "verdict": "FAIL", "note": "absolute times on a shared 2-core machine are noise",
        "machine": {"cpus": 2},
    }


def make_run(root: Path, *, hostile: bool = True, bench: bool = True, failing: bool = True,
             key: Path | None = None, run_facts: dict[str, Any] | None = None) -> Path:
    """A signed run directory at ``root`` (its key pair in ``root/keys`` unless ``key`` is given);
    ``failing``: the reference sink duplicates on the second row (FAIL)."""
    private = key or generate_key(root / "keys").private
    paths = write_artifacts(root, outcomes(hostile=hostile, failing=failing), seed=0, certified="reference",
                            run_facts=run_facts)
    signer = load_signer(private)
    for name in ("matrix", "summary"):
        sign_artifact(paths[name], signer, predicate={"verdict": "FAIL"}, test_result=build_test_result_predicate(
            passed=False, configuration=[{"name": "seed", "value": "0"}], passed_tests=[], failed_tests=["x"]))
    if bench:
        path = root / ARTIFACTS / "rss_benchmark.json"
        publish_bytes(path, canonical_bytes(with_content_digest(bench_document())))
        sign_artifact(path, signer, predicate={})
    return root
