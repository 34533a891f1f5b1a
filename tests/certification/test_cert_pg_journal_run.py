"""``certify run --journal postgres|postgresql://…``: the reference sink certified on the production
journal. Each row-and-sink run gets its own database; the throwaway cluster (or the databases made on a
given server) is gone when the run ends, also after an error or Ctrl-C; the password never shows.

Needs the PostgreSQL server binaries: skipped without them unless RESTPROOF_REQUIRE_POSTGRES=1 (CI),
where they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from certification.journal_backend import journal_provider, parse_journal_choice
from sink.journal.postgres.cluster import ClusterSet, ClusterUnavailable, find_server_binaries

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
CERTIFY = str(Path(sys.executable).with_name("certify"))
SENTINEL = "s3ntinel-Passw0rd"
ARTIFACTS = Path("test_artifacts") / "connectors" / "rest"


@pytest.fixture(autouse=True)
def _server_binaries() -> None:
    try:
        find_server_binaries()
    except ClusterUnavailable as exc:
        if os.environ.get("RESTPROOF_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL required (RESTPROOF_REQUIRE_POSTGRES=1) but unavailable: {exc}", pytrace=False)
        pytest.skip(f"PostgreSQL server binaries not installed: {exc}")


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A TMPDIR to look for the run's cluster in, short enough for the server's unix socket path
    (about 107 bytes; pytest's own tmp_path is too deep)."""
    path = Path(tempfile.mkdtemp(prefix="rpj-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _certify(out: Path, journal: str, *rows: str, env: dict[str, str] | None = None,
             ) -> subprocess.CompletedProcess[str]:
    only = [arg for row in rows for arg in ("--only", row)]
    return subprocess.run([CERTIFY, "run", *only, "--journal", journal, "--parallel", "2", "--out", str(out),
                           "--json"], capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, **(env or {})})


def _artifact(out: Path, name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((out / ARTIFACTS / name).read_bytes())
    return document


def _clusters(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("restproof-pg-certify-*"))


def _processes_under(tmp: Path) -> list[str]:
    """Command lines of live processes that name a path under ``tmp`` (the run's receiver and proxies)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if entry.name.isdigit() and str(tmp) in command:
            found.append(command)
    return found


def test_the_reference_sink_passes_on_a_throwaway_cluster_and_the_cluster_is_gone(tmp_path: Path,
                                                                                   short_tmp: Path) -> None:
    tmp = short_tmp
    out = tmp_path / "out"
    # Rows that would collide on one journal (the second would find the first's delivery admitted),
    # and a kill: the recovery host must reach the same journal.
    # And the journal server itself killed under the reference sink, on a cluster of the row's own.
    killed = "sync.journal_kill.sigkill.journal.reserve_submitting.after"
    done = _certify(out, "postgres", "sync.none", "sync.cut.after_commit", "sync.kill.after_commit", killed,
                    env={"TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["verdict"] == "PASS" and summary["failed_rows"] == []
    for name in ("certification_summary.json", "remote_effect_fault_matrix.json"):
        environment = _artifact(out, name)["environment"]
        assert environment["journal"] == {"backend": "postgresql", "provided_by": "throwaway_cluster"}
        assert environment["worker_isolation"] == "fresh_process"  # a namespace cannot reach the server
    rows = {row["row_id"]: row for row in _artifact(out, "remote_effect_fault_matrix.json")["rows"]}
    assert set(rows) == {"sync.none", "sync.cut.after_commit", "sync.kill.after_commit", killed}
    for row in rows.values():
        reference = row["sinks"]["reference"]
        assert reference["verdict"] == "PASS", reference["reasons"]
        assert reference["fault_fired"] is not False
        assert all(value == 0 for value in reference["counters"].values()), reference["counters"]
    assert rows["sync.cut.after_commit"]["sinks"]["naive-retry"]["verdict"] == "CAUGHT"
    assert rows["sync.kill.after_commit"]["sinks"]["reference"]["exit_codes"][0] == -signal.SIGKILL
    # The worker met the outage (exit 3, journal unavailable) and another host finished the delivery.
    assert rows[killed]["sinks"]["reference"]["exit_codes"] == [3, 0]
    assert rows[killed]["sinks"]["reference"]["fault_fired"] is True
    assert rows[killed]["sinks"]["naive-retry"]["verdict"] == "N/A"  # it keeps no journal to lose
    assert summary["fault_space"]["covered"] > 0
    assert _clusters(tmp) == []  # destroyed at the end of the run


def test_a_given_dsn_gets_a_database_per_run_dropped_afterwards_and_its_password_never_shows(
        tmp_path: Path, pg_cluster: ClusterSet) -> None:
    cluster = pg_cluster.primary()  # the server's defaults: the journal refuses a server without fsync
    # Trust authentication ignores the password: it is here only to be looked for.
    dsn = f"postgresql://postgres:{SENTINEL}@127.0.0.1:{cluster.port}/postgres"
    out = tmp_path / "out"
    done = _certify(out, dsn, "sync.none")
    assert done.returncode == 0, done.stderr[-3000:]
    assert _artifact(out, "certification_summary.json")["environment"]["journal"] == {
        "backend": "postgresql", "provided_by": "given_dsn"}
    assert SENTINEL not in done.stdout + done.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path
    with psycopg.connect(dsn, autocommit=True) as conn:
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'restproof_cert_%'").fetchall()
    assert left == []


def test_the_cluster_is_destroyed_after_an_error_inside_the_run(short_tmp: Path, monkeypatch: pytest.MonkeyPatch,
                                                                ) -> None:
    tmp_path = short_tmp
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile caches its directory: make it honour TMPDIR
    for interruption in (RuntimeError("a lane failed"), KeyboardInterrupt()):
        with pytest.raises(type(interruption)), journal_provider(parse_journal_choice("postgres")) as journals:
            first, second = journals.arguments(), journals.arguments()
            assert first[0] == second[0] == "--journal" and first[1] != second[1]  # a database per run
            with psycopg.connect(first[1], autocommit=True) as conn:
                assert conn.execute("SELECT current_database()").fetchone() == (urlsplit(first[1]).path[1:],)
            assert len(_clusters(tmp_path)) == 1
            raise interruption
        assert _clusters(tmp_path) == []
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(first[1], connect_timeout=3)


def test_ctrl_c_stops_the_run_and_destroys_its_cluster(tmp_path: Path, short_tmp: Path) -> None:
    tmp = short_tmp
    process = subprocess.Popen([CERTIFY, "run", "--only", "sync.none", "--journal", "postgres", "--parallel", "1",
                                "--out", str(tmp_path / "out")], env={**os.environ, "TMPDIR": str(tmp)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list(tmp.glob("restproof-certify-*")) and time.monotonic() < deadline:
            time.sleep(0.2)  # the rows' work directory exists once the cluster is up
        assert _clusters(tmp), "the cluster never started"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode != 0
    assert "Traceback" not in stderr
    assert _clusters(tmp) == []
    assert _processes_under(tmp) == []  # the lane's receiver and proxy stopped with it
