"""Run one preparation in this process (the crash tests SIGKILL it at a named point).

Usage: python -m tests.preparation.pr_run WORKLOAD ARTIFACTS JOURNAL MARKERS FROM TO
``RESTPROOF_PREPARATION_FAILPOINT`` kills at a preparation point, ``RESTPROOF_JOURNAL_FAULT`` at a
point inside the journal's admission transaction.
"""

from __future__ import annotations

import os
import signal
import sys
from datetime import date
from pathlib import Path

from sink.artifacts import LocalArtifactStore
from sink.compiler import compile_files, default_paths
from sink.journal.markers import FileMarkerStore
from sink.journal.sqlite.adapter import open_sqlite_journal
from sink.preparation import env_failpoint, prepare
from sink.source import source_port


def _journal_fault(point: str) -> None:
    if os.environ.get("RESTPROOF_JOURNAL_FAULT") == point:
        os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> None:
    workload, artifacts, journal_path, markers, start, end = argv
    path = Path(workload)
    plan = compile_files(default_paths(path))
    assert plan.workload.source is not None
    journal = open_sqlite_journal(Path(journal_path), markers=FileMarkerStore(Path(markers)), fault_hook=_journal_fault)
    try:
        result = prepare(plan, date.fromisoformat(start), date.fromisoformat(end),
                         source=source_port(plan.workload.source, path.parent), store=LocalArtifactStore(artifacts),
                         journal=journal, failpoint=env_failpoint)
    finally:
        journal.close()
    print(result.parent_id, len(result.admitted.children), result.resumed)


if __name__ == "__main__":
    main(sys.argv[1:])
