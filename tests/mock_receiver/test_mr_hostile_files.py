"""Hostile files: the behaviour loader (CLI validate/serve, PUT /_admin/behaviour) and the state directory."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from hostile_corpus import BEHAVIOUR_CORPUS, SENTINEL
from mr_support import ADMIN_HEADERS, MOCK_RECEIVER_BIN, RECEIVERS, bundled, client_for

from mock_receiver.behaviour import BehaviourError, load_behaviour_bytes, load_behaviour_file
from mock_receiver.documents import MAX_BYTES, DocumentError, load_document

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("name", sorted(BEHAVIOUR_CORPUS))
def test_hostile_behaviour_documents_are_refused_with_a_clean_message(name: str) -> None:
    started = time.monotonic()
    with pytest.raises(BehaviourError) as refused:
        load_behaviour_bytes(BEHAVIOUR_CORPUS[name], "doc")
    message = str(refused.value)
    assert "\n" not in message and len(message) < 2000
    assert SENTINEL not in message and "Traceback" not in message
    assert time.monotonic() - started < 5, "a bounded loader refuses quickly"


@pytest.mark.parametrize("name", sorted(BEHAVIOUR_CORPUS))
def test_hostile_behaviour_put_is_a_4xx_problem_and_changes_nothing(tmp_path: Path, name: str) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        response = client.put("/_admin/behaviour", content=BEHAVIOUR_CORPUS[name],
                              headers={**ADMIN_HEADERS, "content-type": "application/yaml"})
        assert response.status_code == (413 if len(BEHAVIOUR_CORPUS[name]) > MAX_BYTES else 422), response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert SENTINEL not in response.text
        assert client.get("/_admin/behaviour").json()["name"] == "stripe-like"


@pytest.mark.parametrize("name", ["invalid_yaml_date", "huge_integer", "yaml_nested_2000", "json_nested_2000",
                                  "duplicate_key", "invalid_utf8", "too_large", "alias_bomb", "lone_surrogate_json"])
@pytest.mark.parametrize("command", ["validate", "serve"])
def test_hostile_behaviour_files_exit_2_with_one_line(tmp_path: Path, name: str, command: str) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_bytes(BEHAVIOUR_CORPUS[name])
    argv = [str(path)] if command == "validate" else ["--behaviour", str(path), "--port", "0",
                                                      "--state-dir", str(tmp_path / "s")]
    result = subprocess.run([str(MOCK_RECEIVER_BIN), command, *argv], check=False, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr and SENTINEL not in result.stderr


def test_unquoted_dates_stay_strings_and_valid_files_still_load() -> None:
    assert load_document(b"a: 2026-07-01\nb: 2026-13-45\n") == {"a": "2026-07-01", "b": "2026-13-45"}
    for path in sorted(RECEIVERS.glob("*.yaml")):
        assert load_behaviour_file(path).name == path.stem


def test_bounds_sit_just_above_real_documents() -> None:
    """The limits refuse the hostile cases, not deep-but-legal ones: 30 levels and 30 digits load."""
    assert load_document(b"[" * 30 + b"]" * 30) is not None
    assert load_document(b"n: " + b"9" * 30) == {"n": int("9" * 30)}
    with pytest.raises(DocumentError, match="digits"):
        load_document(b"n: " + b"9" * 31)
    with pytest.raises(DocumentError, match="deeper"):
        load_document(b"[" * 33 + b"]" * 33)
    with pytest.raises(DocumentError, match="duplicate"):
        load_document(b"{a: 1, a: 1}")


@pytest.mark.parametrize("command", ["validate", "serve"])
def test_a_fifo_is_refused_without_hanging(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "behaviour.fifo"
    os.mkfifo(fifo)
    argv = [str(fifo)] if command == "validate" else ["--behaviour", str(fifo), "--port", "0",
                                                      "--state-dir", str(tmp_path / "s")]
    result = subprocess.run([str(MOCK_RECEIVER_BIN), command, *argv], check=False, capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 2
    assert "not a regular file" in result.stderr and "Traceback" not in result.stderr


def test_a_directory_as_behaviour_is_refused(tmp_path: Path) -> None:
    result = subprocess.run([str(MOCK_RECEIVER_BIN), "validate", str(tmp_path)], check=False,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("tables", [["CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)"],
                                    ["CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
                                     "INSERT INTO meta VALUES ('format', 'someone-else.v3')"]])
def test_an_unrelated_sqlite_file_in_the_state_dir_is_refused_untouched(tmp_path: Path, tables: list[str]) -> None:
    state = tmp_path / "state"
    state.mkdir()
    foreign = state / "ledger.sqlite3"
    connection = sqlite3.connect(foreign)
    for statement in tables:
        connection.execute(statement)
    connection.commit()
    connection.close()
    before = _digest(foreign)
    result = subprocess.run([str(MOCK_RECEIVER_BIN), "serve", "--port", "0", "--behaviour",
                             str(RECEIVERS / "stripe-like.yaml"), "--state-dir", str(state)],
                            check=False, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2, result.stderr
    assert "not a mock-receiver ledger" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert _digest(foreign) == before
    assert sorted(path.name for path in state.iterdir()) == ["ledger.sqlite3"]  # no -wal, no -shm


def test_a_non_database_file_as_ledger_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "ledger.sqlite3").write_text("not a database at all " * 100)
    result = subprocess.run([str(MOCK_RECEIVER_BIN), "serve", "--port", "0", "--behaviour",
                             str(RECEIVERS / "stripe-like.yaml"), "--state-dir", str(state)],
                            check=False, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (state / "ledger.sqlite3").read_text().startswith("not a database")


def test_our_own_ledger_reopens_after_a_reset(tmp_path: Path) -> None:
    """The format marker survives reset, and a ledger written before the marker existed still opens."""
    with client_for(bundled("stripe-like"), tmp_path) as client:
        assert client.post("/_admin/reset", headers=ADMIN_HEADERS).status_code == 200
    connection = sqlite3.connect(tmp_path / "ledger.sqlite3")
    assert connection.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() == (
        "mock-receiver.ledger.v1",)
    connection.execute("DELETE FROM meta")
    connection.commit()
    connection.close()
    with client_for(bundled("stripe-like"), tmp_path) as client:
        assert json.loads(client.get("/_admin/health").text)["status"] == "ok"
