"""Shared fixtures: a PostgreSQL server for the journal tests.

`pg_dsn` (session): honours RESTPROOF_PG_DSN (an existing server the tests may create schemas in);
otherwise starts a throwaway cluster from the server binaries on a free 127.0.0.1 port, as the
`postgres` user when running as root, and stops it at session end.

When no server can be had the dependent tests skip with the reason, unless
RESTPROOF_REQUIRE_POSTGRES=1 is set (CI), in which case they fail.

`pg_cluster` (function): a factory for extra clusters, e.g. a primary plus a synchronous standby.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sink.journal.postgres.cluster import (
    Cluster,
    ClusterSet,
    ClusterUnavailable,
    find_server_binaries,
    start_primary,
)

ENV_DSN = "RESTPROOF_PG_DSN"
ENV_REQUIRE = "RESTPROOF_REQUIRE_POSTGRES"


def _postgres_unavailable(reason: str) -> None:
    if os.environ.get(ENV_REQUIRE) == "1":
        pytest.fail(f"PostgreSQL required ({ENV_REQUIRE}=1) but unavailable: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL unavailable: {reason} (set {ENV_DSN} to use an existing server)")


@pytest.fixture(scope="session")
def pg_server_binaries() -> Path:
    """The server binaries' directory; skip with the reason, or fail in CI, when absent."""
    try:
        return find_server_binaries()
    except ClusterUnavailable as exc:
        _postgres_unavailable(f"server binaries not installed: {exc}")
        raise  # unreachable: the call above always skips or fails


@pytest.fixture(scope="session")
def _pg_session_cluster() -> Iterator[Cluster | None]:
    if os.environ.get(ENV_DSN):
        yield None
        return
    try:
        cluster = start_primary({"max_connections": 200, "fsync": "off", "synchronous_commit": "off",
                                 "full_page_writes": "off"})
    except (ClusterUnavailable, OSError) as exc:
        _postgres_unavailable(str(exc))
        return
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture(scope="session")
def pg_dsn(_pg_session_cluster: Cluster | None) -> str:
    """A libpq DSN of a server the tests may create and drop schemas in."""
    if _pg_session_cluster is None:
        return os.environ[ENV_DSN]
    return _pg_session_cluster.dsn()


@pytest.fixture
def pg_cluster() -> Iterator[ClusterSet]:
    """Extra clusters for one test (primary + standby pairs); destroyed after it."""
    clusters = ClusterSet(on_unavailable=_postgres_unavailable)
    try:
        yield clusters
    finally:
        clusters.destroy_all()
