"""One full `delivery run` of each protocol family on a PostgreSQL journal (`--journal
postgresql://…`), then `inspect` from a fresh process: completed, each child applied once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from e2e_support import Operator, url_dsn
from sv_support import Services, start_services, stop

from sink.journal.postgres.cluster import ClusterSet, ClusterUnavailable

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def durable_dsn(pg_server_binaries: object) -> Iterator[str]:
    """A durable (fsync on) throwaway server: the CLI opens its journal durable, and refuses the
    lossy session server of the other PostgreSQL tests."""
    clusters = ClusterSet()
    try:
        cluster = clusters.primary({"fsync": "on"})
    except (ClusterUnavailable, OSError) as exc:
        pytest.fail(f"could not start a durable test cluster: {exc}", pytrace=False)
    try:
        yield cluster.dsn()
    finally:
        clusters.destroy_all()


@pytest.fixture
def journal_url(durable_dsn: str) -> Iterator[str]:
    """A database of its own: the CLI's journal schema name is fixed."""
    name = "e2e_" + uuid.uuid4().hex[:12]
    with psycopg.connect(durable_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url_dsn(durable_dsn, name)
    finally:
        with psycopg.connect(durable_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.parametrize(("behaviour", "workload"), [("json-batches", "measurements-sync"),
                                                     ("dataset-jobs", "measurements-async")])
def test_a_full_run_on_a_postgresql_journal(tmp_path: Path, journal_url: str, behaviour: str, workload: str) -> None:
    services: Services = start_services(behaviour, tmp_path / "services")
    try:
        operator = Operator(tmp_path / "work", services, journal=journal_url)
        result = operator.run(workload, "2026-03-01", "2026-03-05")
        assert result.code == 0, result.stderr
        assert result.children and all(c["status"] == "completed" for c in result.children)
        assert all(c["axes"]["remote_effect"] == "FULLY_APPLIED" for c in result.children)
        assert len(services.effects()) == len(result.children) == len(operator.posts())
        inspected = operator.inspect(result.document["parent_id"])
        assert inspected["exit_code"] == 0
        assert inspected["frontier"]["frontier_order"] == len(result.children) - 1
        assert not (operator.state / "journal.sqlite3").exists(), "the journal is the PostgreSQL one"
    finally:
        stop(services.proxy)
        stop(services.receiver)
