"""``delivery preview`` and ``delivery gc --dry-run`` through the real CLI process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

from sink.artifacts import LocalArtifactStore
from sink.journal.markers import FileMarkerStore
from sink.journal.sqlite.adapter import open_sqlite_journal
from sink.preparation import prepare
from tests.payload.pl_helpers import GOLDEN_RECORDS, REPO, ListSource, bundled_plan

SCENARIOS = REPO / "scenarios"
ASYNC = SCENARIOS / "workloads" / "measurements-async.yaml"
NO_NETWORK = """
import socket
def _refuse(*args, **kwargs):
    raise OSError("network access is forbidden in this test")
socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
"""


def _delivery(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sink.cli", *args], capture_output=True, text=True, timeout=180,
                          cwd=REPO, env={**os.environ, **(env or {})}, check=False)


def _scenarios_with(tmp_path: Path, data: bytes) -> Path:
    root = tmp_path / "scenarios"
    for name in ("profiles", "bindings", "workloads", "environments", "mappings"):
        shutil.copytree(SCENARIOS / name, root / name)
    (root / "workloads" / "data" / "measurements.csv").write_bytes(data)
    return root / "workloads" / "measurements-async.yaml"


def test_preview_is_offline_stable_and_complete(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(NO_NETWORK, encoding="utf-8")
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
    args = ("preview", str(ASYNC), "--scope-from", "2026-03-01", "--scope-to", "2026-03-08", "--format", "json")
    first, second = _delivery(*args, env=env), _delivery(*args, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    view = json.loads(first.stdout)
    assert view["schema_id"] == "restproof.delivery_preview.v1"
    assert sum(child["rows"] for child in view["children"]) == view["parent"]["row_count"] == 8
    child = view["children"][0]
    assert child["wire_bytes"] > 0 and child["request"]["method"] == "POST"
    assert child["wire_digest"].startswith("sha256:") and child["payload_ref"].startswith("sha256:")
    assert [part["name"] for part in child["request"]["multipart"]["parts"]] == ["range_start", "range_end", "file"]
    assert "authorization" not in first.stdout.lower()


def test_preview_progress_goes_to_stderr(tmp_path: Path) -> None:
    done = _delivery("preview", str(ASYNC), "--scope-from", "2026-03-01", "--scope-to", "2026-03-05", "--progress")
    assert done.returncode == 0
    assert "sealing" in done.stderr and "%" in done.stderr
    assert "sealing" not in done.stdout


def test_hostile_sources_exit_2_with_a_stable_code(tmp_path: Path) -> None:
    header = b"business_date,station_id,reading,label,valid,observed_at,sample_count\n"
    cases = {
        "invalid_utf8": (header + b"2026-03-01,00017,1.0,\xc3\x28,true,2026-03-01T00:00:00Z,1\n",
                         "source.invalid_utf8"),
        "missing_scope": (b"station_id,reading\n00017,1.0\n", "source.missing_scope_field"),
        "huge_field": (header + b"2026-03-01,00017,1.0," + b"z" * (3 << 20) + b",true,2026-03-01T00:00:00Z,1\n",
                       "source.field_too_large"),
    }
    for name, (data, code) in cases.items():
        workload = _scenarios_with(tmp_path / name, data)
        done = _delivery("preview", str(workload), "--scope-from", "2026-03-01", "--scope-to", "2026-03-05",
                         "--format", "json")
        assert done.returncode == 2, (name, done.stderr)
        assert json.loads(done.stdout)["errors"][0]["code"] == code
        assert "Traceback" not in done.stderr


def test_scope_exceeding_the_limit_is_exit_2(tmp_path: Path) -> None:
    workload = _scenarios_with(tmp_path, (SCENARIOS / "workloads" / "data" / "measurements.csv").read_bytes())
    profile = workload.parent.parent / "profiles" / "mock.dataset-jobs@1.yaml"
    profile.write_text(profile.read_text(encoding="utf-8").replace("max_wire_bytes: 16000000", "max_wire_bytes: 400")
                       .replace("planning_wire_bytes: 14000000", "planning_wire_bytes: 400"), encoding="utf-8")
    done = _delivery("preview", str(workload), "--scope-from", "2026-03-01", "--scope-to", "2026-03-05",
                     "--format", "json")
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["errors"][0]["code"] == "REST_DELIVERY_SCOPE_EXCEEDS_LIMIT"


def test_gc_dry_run_lists_only_unreferenced_artifacts(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")
    journal = open_sqlite_journal(tmp_path / "journal.db", markers=FileMarkerStore(tmp_path / "markers"))
    prepare(bundled_plan("measurements-sync"), date(2026, 3, 1), date(2026, 3, 4), source=ListSource(GOLDEN_RECORDS),
            store=store, journal=journal)
    journal.close()
    orphan = store.put_bytes(b"an orphan").digest
    before = sorted(store.list_refs())
    done = _delivery("gc", "--dry-run", "--artifacts-dir", str(tmp_path / "artifacts"), "--journal",
                     f"sqlite:{tmp_path / 'journal.db'}", "--grace-seconds", "0", "--format", "json")
    assert done.returncode == 0, done.stderr
    view = json.loads(done.stdout)
    assert view["unreferenced"] == [orphan]
    assert view["live"] == len(before) - 1
    assert sorted(store.list_refs()) == before  # a dry run deletes nothing
    refused = _delivery("gc", "--artifacts-dir", str(tmp_path / "artifacts"))
    assert refused.returncode == 2
