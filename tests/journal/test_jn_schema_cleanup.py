"""The PostgreSQL branch of the `journal` fixture drops its per-test schema at teardown."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from conftest import postgres_journal_env

from sink.journal.markers import FileMarkerStore

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(60)]


def _journal_schemas(dsn: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'jn\\_%'").fetchall()
    return {str(r[0]) for r in rows}


def test_jn_schema_is_dropped_after_the_test_even_when_it_fails(pg_dsn: str, tmp_path: Path) -> None:
    before = _journal_schemas(pg_dsn)
    with postgres_journal_env(pg_dsn, FileMarkerStore(tmp_path / "m")) as env:
        env.journal.configure_capacity("receiver-jobs", 1)  # something written in the schema
        created = _journal_schemas(pg_dsn) - before
        assert len(created) == 1
    assert not created & _journal_schemas(pg_dsn)

    with (pytest.raises(RuntimeError, match="test body failed"),
          postgres_journal_env(pg_dsn, FileMarkerStore(tmp_path / "m2"))):
        created = _journal_schemas(pg_dsn) - before
        assert len(created) == 1
        raise RuntimeError("test body failed")
    assert not created & _journal_schemas(pg_dsn)
