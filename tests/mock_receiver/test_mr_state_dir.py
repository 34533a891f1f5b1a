"""A state directory prepared by someone else: `mock-receiver serve` never writes through a planted link
(endpoints.json, the ledger and its -wal/-shm/-journal files), refuses with one exit-2 line, and leaves
the link's target as it was."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import httpx
import pytest
from mr_support import MOCK_RECEIVER_BIN, RECEIVERS, ServerProcess, admin_items, rows_for

from mock_receiver.state_files import StateFileRefused, write_new_file

pytestmark = pytest.mark.timeout(120)

STATE_FILES = ["endpoints.json", "ledger.sqlite3", "ledger.sqlite3-wal", "ledger.sqlite3-shm",
               "ledger.sqlite3-journal"]


def _serve(state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MOCK_RECEIVER_BIN), "serve", "--port", "0", "--admin-port", "0", "--behaviour",
                           str(RECEIVERS / "stripe-like.yaml"), "--state-dir", str(state)],
                          check=False, capture_output=True, text=True, timeout=60)


def _assert_refused(result: subprocess.CompletedProcess[str], name: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert name in lines[0] and lines[0].startswith("mock-receiver: --state-dir:"), lines[0]
    assert result.stdout == ""  # nothing announced


@pytest.mark.parametrize("name", STATE_FILES)
@pytest.mark.parametrize("target_exists", [True, False])
def test_a_planted_link_is_refused_and_its_target_untouched(tmp_path: Path, name: str, target_exists: bool) -> None:
    state, elsewhere = tmp_path / "state", tmp_path / "elsewhere"
    state.mkdir()
    elsewhere.mkdir()
    target = elsewhere / "victim"
    if target_exists:
        target.write_bytes(b"the victim's own bytes\n")
    (state / name).symlink_to(target)
    result = _serve(state)
    _assert_refused(result, name)
    if target_exists:
        assert target.read_bytes() == b"the victim's own bytes\n"
    else:
        assert not target.exists()
    assert sorted(path.name for path in elsewhere.iterdir()) == (["victim"] if target_exists else [])
    assert sorted(path.name for path in state.iterdir()) == [name]  # nothing created beside it


@pytest.mark.parametrize("name", STATE_FILES)
def test_a_directory_or_fifo_in_place_of_a_state_file_is_refused(tmp_path: Path, name: str) -> None:
    for kind in ("directory", "fifo"):
        state = tmp_path / kind
        state.mkdir()
        if kind == "directory":
            (state / name).mkdir()
        else:
            os.mkfifo(state / name)
        _assert_refused(_serve(state), name)


def test_a_link_to_the_state_files_of_another_receiver_is_refused(tmp_path: Path) -> None:
    """A link to a real ledger (another receiver's ground truth) is no better than one to a stranger."""
    other = tmp_path / "other"
    with ServerProcess(RECEIVERS / "stripe-like.yaml", other):
        pass
    before = (other / "ledger.sqlite3").read_bytes()
    state = tmp_path / "state"
    state.mkdir()
    (state / "ledger.sqlite3").symlink_to(other / "ledger.sqlite3")
    _assert_refused(_serve(state), "ledger.sqlite3")
    assert (other / "ledger.sqlite3").read_bytes() == before


def test_a_regular_state_directory_is_reused_and_endpoints_replaced(tmp_path: Path) -> None:
    state = tmp_path / "state"
    for _ in range(2):
        with ServerProcess(RECEIVERS / "stripe-like.yaml", state) as server:
            endpoints = json.loads((state / "endpoints.json").read_text())
            assert endpoints["data_url"] == server.data_url
    assert (state / "endpoints.json").stat().st_nlink == 1
    assert not [path for path in state.iterdir() if path.name.startswith(".endpoints")]  # no temporary left
    with sqlite3.connect(state / "ledger.sqlite3") as connection:
        assert connection.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() is not None


def test_a_hard_link_planted_as_endpoints_is_replaced_not_written_through(tmp_path: Path) -> None:
    """A hard link cannot be told from a file, so the name is replaced by a new file (rename), and the
    other name of the old inode keeps its bytes."""
    state = tmp_path / "state"
    state.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me\n")
    os.link(victim, state / "endpoints.json")
    with ServerProcess(RECEIVERS / "stripe-like.yaml", state):
        assert json.loads((state / "endpoints.json").read_text())["event"] == "listening"
    assert victim.read_bytes() == b"keep me\n"


def test_write_new_file_refuses_a_link_planted_after_the_start_check(tmp_path: Path) -> None:
    (tmp_path / "endpoints.json").symlink_to(tmp_path / "target")
    with pytest.raises(StateFileRefused, match="symbolic link"):
        write_new_file(tmp_path / "endpoints.json", b"{}")
    assert not (tmp_path / "target").exists()
    # a link planted at the temporary name is never followed either (O_EXCL | O_NOFOLLOW)
    (tmp_path / "endpoints.json").unlink()
    (tmp_path / f".endpoints.json.{os.getpid()}.tmp").symlink_to(tmp_path / "target")
    write_new_file(tmp_path / "endpoints.json", b"{}")
    assert (tmp_path / "endpoints.json").read_bytes() == b"{}" and not (tmp_path / "target").exists()


def test_the_running_receiver_keeps_its_lock_on_the_ledger(tmp_path: Path) -> None:
    """The link checks open the ledger themselves; they must not leave the process without SQLite's
    shared lock (closing any descriptor of a file drops the process's POSIX locks on it): another
    process's connection that closes would then think it is the last one and checkpoint and delete the
    WAL under the running receiver, which would go on writing to a file no one else sees."""
    state = tmp_path / "state"
    with ServerProcess(RECEIVERS / "stripe-like.yaml", state) as server:
        assert httpx.post(server.data_url + "/mock/v1/resources/measurements/batches",
                          params={"range_start": "2026-07-01", "range_end": "2026-07-02"},
                          json=rows_for(["2026-07-01"]), timeout=30).status_code == 200
        reader = sqlite3.connect(state / "ledger.sqlite3")
        assert reader.execute("SELECT count(*) FROM effects").fetchone() == (1,)
        reader.close()
        assert (state / "ledger.sqlite3-wal").exists(), "the WAL of a running receiver was deleted"
        with sqlite3.connect(state / "ledger.sqlite3") as writer:
            writer.execute("CREATE TABLE IF NOT EXISTS probe (x)")  # a schema change the receiver must see
            writer.execute("DROP TABLE probe")
        with httpx.Client(base_url=server.admin_url, timeout=30) as admin:
            assert len(admin_items(admin, "effects")) == 1
