"""A ``delivery resume`` imports only what it runs (start-up cost, docs/benchmarks.md "Client CPU").

Resume reads the pinned plan and the journal: freezing, sealing and admission (with the source
readers, planner and compiler under them), the operator's reconcile and PyYAML are imported only by
the commands that use them. A module-level import that drags one back in fails here, not as a
slower benchmark. The failure mapping of ``guarded`` still catches the errors of those modules
once a command has imported them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from sink.cli.common import OutputFormat
from sink.cli.guarded import guarded
from sink.compiler.diagnostics import CompileError, Diagnostic
from sink.runtime.reconcile import ReconcileRefused

REPO = Path(__file__).resolve().parents[2]
NOT_ON_RESUME = ("sink.preparation", "sink.compiler", "sink.planning", "sink.source.freeze", "sink.payload.sealer",
                 "sink.identity", "sink.runtime.reconcile", "sink.bounded_yaml", "yaml")

# What a resume imports and runs before its first child: the command's service, the composition
# root, the SQLite adapter, the bundled design contract, the built-in policies, and guarded's own
# imports (the action is a no-op here).
PROBE = """
import sys
import sink.runtime.service, sink.runtime.composition, sink.journal.sqlite.adapter
from sink.cli.common import OutputFormat
from sink.cli.guarded import guarded
from sink.design.query import load_design_contract
from sink.security.policies import PolicyStore
from sink.runtime.failpoints import ALL_FAILPOINTS
load_design_contract()
store = PolicyStore.from_environ({})
store.tls("loopback-plaintext@1"), store.network("loopback-only@1")
guarded(OutputFormat.JSON, lambda: None)
print("\\n".join(sorted(sys.modules)))
"""


def test_the_resume_path_imports_no_preparation_compiler_reconcile_or_yaml() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True,
                          cwd=REPO)
    loaded = set(done.stdout.split())
    assert "sink.runtime.supervisor" in loaded and "sink.preparation_points" in loaded
    assert sorted(m for m in loaded if m.split(".")[0] == "yaml" or m in NOT_ON_RESUME or
                  any(m.startswith(f"{name}.") for name in NOT_ON_RESUME)) == []


def test_guarded_still_maps_a_compile_error_and_a_refused_reconcile(capsys: pytest.CaptureFixture[str]) -> None:
    # This process has imported both modules (above), as ``run`` and ``reconcile`` do.
    def compile_error() -> None:
        raise CompileError([Diagnostic(code="workload.invalid", location="$", message="bad")])

    def refused() -> None:
        raise ReconcileRefused("reconcile.not_permitted", "no")

    for action, code in ((compile_error, "workload.invalid"), (refused, "reconcile.not_permitted")):
        with pytest.raises(typer.Exit) as caught:
            guarded(OutputFormat.JSON, action)
        assert caught.value.exit_code == 2
        assert json.loads(capsys.readouterr().out)["errors"][0]["code"] == code
