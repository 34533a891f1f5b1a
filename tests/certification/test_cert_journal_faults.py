"""``journal_kill``: the journal server dies with the worker frozen at a crash point.

The fault is driven here against a real process (a script that passes the sink's failpoints) and a
fake server that records what was done to it; the live rows run the reference sink on a real
cluster (``test_cert_pg_journal_run.py`` and the PostgreSQL quick matrix in CI).
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from certification.coverage import Cell, fault_space, row_cells
from certification.fault_types import fault_of
from certification.faults import FaultContext
from certification.journal_faults import JournalKillFault, JournalServer
from certification.procfs import children_of, process_state, until_gone
from certification.scenarios import CatalogError, Fault, bundled_rows, load_catalog
from certification.sinks import Invocation, Launched
from sink.journal.postgres.cluster import ClusterUnavailable

POINT = "journal.record_submit_result.before"
SCRIPT = textwrap.dedent("""
    import os, sys
    from sink.runtime.failpoints import Failpoints
    points = Failpoints.from_environ(os.environ)
    for name in sys.argv[1:]:
        points.hit(name)
        print("passed " + name, flush=True)
""")


class FakeServer(JournalServer):
    def __init__(self, *, restart_fails: bool = False, kill_fails: bool = False) -> None:
        self.actions: list[str] = []
        self.restart_fails, self.kill_fails = restart_fails, kill_fails

    @property
    def dsn(self) -> str:
        return "postgresql://postgres@127.0.0.1:1/postgres"

    def kill(self, mode: str) -> None:
        if self.kill_fails:
            raise OSError("no such process")
        self.actions.append(f"kill:{mode}")

    def restart(self) -> None:
        if self.restart_fails:
            raise ClusterUnavailable("pg_ctl failed")
        self.actions.append("restart")

    def destroy(self) -> None:
        self.actions.append("destroy")


def _fault(server: FakeServer, mode: str = "sigkill", point: str = POINT) -> JournalKillFault:
    return JournalKillFault(Fault(type="journal_kill", point=point, mode=mode),  # type: ignore[arg-type]
                            server=lambda: server)


def _drive(fault: JournalKillFault, tmp_path: Path, *points: str) -> tuple[int, str]:
    env = {**os.environ, **fault.environment(())}
    launched = Launched(Invocation((sys.executable, "-c", SCRIPT, *points), tmp_path, env),
                        before_reap=lambda: fault.before_first_reap(ctx))
    ctx = FaultContext(row=None, proxy=None, receiver=None, seed=0)  # type: ignore[arg-type]
    launched.go()
    fault.during_first_run(ctx, launched)
    finished = launched.wait(60)
    fault.restore(ctx)
    return finished.exit_code, finished.stdout


def test_the_server_is_killed_while_the_worker_is_frozen_then_brought_back(tmp_path: Path) -> None:
    server = FakeServer()
    fault = _fault(server, "immediate")
    assert fault.journal_arguments(None) == ("--journal", server.dsn)  # never the run's shared journal
    code, stdout = _drive(fault, tmp_path, "journal.acquire_lease.after", POINT, "journal.release_lease.before")
    assert code == 0  # SIGCONT: it went on past the point, into the outage
    assert stdout.split() == ["passed", "journal.acquire_lease.after", "passed", POINT, "passed",
                              "journal.release_lease.before"]
    assert server.actions == ["kill:immediate", "restart", "destroy"]
    evidence = fault.evidence(None, [], [])  # type: ignore[arg-type]
    assert evidence.fired is True
    assert "killed (immediate)" in evidence.detail and POINT in evidence.detail


def test_a_worker_that_never_reaches_the_point_leaves_the_server_alone_and_the_fault_unfired(
        tmp_path: Path) -> None:
    server = FakeServer()
    fault = _fault(server)
    fault.journal_arguments(None)
    code, _ = _drive(fault, tmp_path, "journal.acquire_lease.after")
    assert code == 0
    assert server.actions == ["destroy"]
    evidence = fault.evidence(None, [], [])  # type: ignore[arg-type]
    assert evidence.fired is False and f"never reached {POINT}" in evidence.detail


@pytest.mark.parametrize(("server", "says"), [
    (FakeServer(restart_fails=True), "did not come back"),
    (FakeServer(kill_fails=True), "could not be killed"),
])
def test_a_kill_or_a_return_that_fails_is_not_a_fired_fault(tmp_path: Path, server: FakeServer, says: str) -> None:
    fault = _fault(server)
    fault.journal_arguments(None)
    code, _ = _drive(fault, tmp_path, POINT)
    assert code == 0  # the worker is never left frozen
    evidence = fault.evidence(None, [], [])  # type: ignore[arg-type]
    assert evidence.fired is False and says in evidence.detail


def test_only_the_first_run_is_armed_and_it_is_armed_to_freeze() -> None:
    fault = _fault(FakeServer())
    assert fault.environment(()) == {"RESTPROOF_FAILPOINT": POINT, "RESTPROOF_FAILPOINT_ACTION": "stop"}
    assert fault.environment([object()]) == {}  # type: ignore[list-item]


def test_it_cannot_act_on_a_sink_without_a_journal_or_without_failpoints() -> None:
    fault = _fault(FakeServer())
    assert fault.not_applicable(uses_journal=False, failpoints=True) == "the sink keeps no journal"
    assert fault.not_applicable(uses_journal=True, failpoints=False) == "the sink has no failpoints"
    assert fault.not_applicable(uses_journal=True, failpoints=True) is None


def test_process_state_reads_names_with_spaces_and_parentheses(tmp_path: Path) -> None:
    assert process_state(os.getpid()) in {"R", "S"}
    assert process_state(2 ** 22 + 12345) is None


# A "postmaster" with two "backends" that outlive it for a moment, as a SIGKILLed postmaster's do.
_SERVER = """
import os, subprocess, sys, time
# One os.write per line: a pipe write under PIPE_BUF is atomic, so two children cannot interleave
# their lines (print's separate writes of text and newline once gave 'upup' and '').
lingering = ("import os, time\\nparent = os.getppid()\\nos.write(1, b'up\\\\n')\\n"
             "while os.getppid() == parent: time.sleep(0.01)\\ntime.sleep(0.3)")
for _ in range(2):
    subprocess.Popen([sys.executable, "-c", lingering])
os.write(1, b"ready\\n")
time.sleep(60)
"""


def test_the_backends_of_a_killed_server_are_gone_before_the_kill_returns() -> None:
    import signal
    import subprocess
    import time

    server = subprocess.Popen([sys.executable, "-c", _SERVER], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    assert sorted(server.stdout.readline().strip() for _ in range(3)) == ["ready", "up", "up"]
    backends = children_of(server.pid)
    assert len(backends) == 2
    os.kill(server.pid, signal.SIGKILL)
    server.wait()
    started = time.monotonic()
    assert [process_state(pid) for pid in backends] != [None, None]  # they linger after their parent
    assert until_gone(backends, timeout_s=10.0) == []  # they exited on their own
    assert time.monotonic() - started >= 0.2
    assert all(process_state(pid) in (None, "Z") for pid in backends)


def test_a_sigkill_of_the_journal_server_returns_once_its_backends_are_gone(tmp_path: Path) -> None:
    import subprocess
    from types import SimpleNamespace

    server = subprocess.Popen([sys.executable, "-c", _SERVER], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    assert sorted(server.stdout.readline().strip() for _ in range(3)) == ["ready", "up", "up"]
    backends = children_of(server.pid)
    (tmp_path / "postmaster.pid").write_text(f"{server.pid}\n{tmp_path}\n")
    cluster = SimpleNamespace(data_dir=tmp_path, running=True)
    JournalServer(cluster).kill("sigkill")  # type: ignore[arg-type]
    server.wait(timeout=5)
    assert cluster.running is False
    assert all(process_state(pid) in (None, "Z") for pid in backends)  # the worker meets a dead server


def test_backends_that_do_not_exit_in_time_are_killed() -> None:
    import subprocess

    stubborn = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert until_gone([stubborn.pid], timeout_s=0.2) == [stubborn.pid]
        assert stubborn.wait(timeout=5) == -9
    finally:
        stubborn.kill()


@pytest.mark.parametrize(("fields", "says"), [
    ({"type": "journal_kill", "point": POINT}, "kill mode"),
    ({"type": "journal_kill", "mode": "sigkill"}, "needs point"),
    ({"type": "failpoint", "point": POINT, "mode": "sigkill"}, "kill mode"),
    ({"type": "journal_kill", "point": "journal.nope.before", "mode": "sigkill"}, "not a crash point"),
    ({"type": "journal_kill", "point": POINT, "mode": "sigterm"}, "mode"),
])
def test_a_journal_kill_row_names_a_known_point_and_a_kill_mode(fields: dict[str, str], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Fault(**fields)  # type: ignore[arg-type]


def _catalog(tmp_path: Path, rows: str) -> Path:
    base = Path(__file__).resolve().parents[2] / "scenarios" / "matrix"
    path = base / f"test-journal-{os.getpid()}-{tmp_path.name}.yaml"
    path.write_text(textwrap.dedent(f"""
        schema_id: restproof.fault_matrix_scenarios.v2
        family: sync_batch
        workload: ../workloads/measurements-sync-serial.yaml
        receiver: ../receivers/json-batches.yaml
        binding: mock_measurements
        scope: {{from: "2026-03-01", to: "2026-03-05"}}
        rows:
          - {rows}
    """))
    return path


def test_the_expansion_makes_one_row_per_point_and_mode_in_order(tmp_path: Path) -> None:
    path = _catalog(tmp_path, "{expand: journal_kills, kinds: [journal], modes: [immediate, sigkill], "
                              "points: [journal.reserve_submitting.after, " + POINT + "], expect: {end: [recovery]}}")
    try:
        rows = load_catalog(path)
    finally:
        path.unlink()
    assert [row.row_id for row in rows] == [
        "sync.journal_kill.immediate.journal.reserve_submitting.after",
        "sync.journal_kill.sigkill.journal.reserve_submitting.after",
        f"sync.journal_kill.immediate.{POINT}", f"sync.journal_kill.sigkill.{POINT}"]
    assert all(isinstance(fault_of(row.fault), JournalKillFault) for row in rows)


def test_points_outside_the_kinds_are_refused(tmp_path: Path) -> None:
    path = _catalog(tmp_path, "{expand: journal_kills, kinds: [journal], points: [http.submit.before_send], "
                              "expect: {end: [recovery]}}")
    try:
        with pytest.raises(CatalogError, match="points the kinds do not make"):
            load_catalog(path)
    finally:
        path.unlink()


def test_journal_server_cells_belong_to_the_postgresql_journal_only() -> None:
    cells = [cell for cell in fault_space() if cell.dimension == "journal_server"]
    assert cells and {cell.journal for cell in cells} == {"postgres"}
    assert {cell.key[1] for cell in cells} == {"sigkill", "immediate"}
    row = next(row for row in bundled_rows() if row.row_id == f"sync.journal_kill.sigkill.{POINT}")
    assert row_cells(row, "postgres") == [Cell("journal_server", (POINT, "sigkill"), "sync_batch", "json-batches",
                                               "postgres")]
    assert row_cells(row, "postgres")[0] in set(cells)
