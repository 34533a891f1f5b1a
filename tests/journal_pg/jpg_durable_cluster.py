"""A durable throwaway cluster for the PostgreSQL durability and crash tests (one per test module).

Imported as a fixture by the modules that use it (not a conftest.py: a second module named
`conftest` would shadow tests/journal/conftest.py for spawned test processes).

fsync is on, but the server's default synchronous_commit is OFF with a 10 s WAL writer delay:
only the journal's per-transaction pin (SET LOCAL synchronous_commit = on) makes a critical commit
durable on it, so these tests fail if that pin is lost. Tests that change server settings (ALTER
SYSTEM) reset them before they end.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sink.journal.postgres.cluster import Cluster, ClusterSet, ClusterUnavailable

DURABLE_SETTINGS: dict[str, str | int] = {"fsync": "on", "synchronous_commit": "off", "wal_writer_delay": "10000ms"}


@pytest.fixture(scope="session", name="durable_cluster")
def durable_cluster_fixture(pg_server_binaries: object) -> Iterator[Cluster]:
    clusters = ClusterSet()
    try:
        cluster = clusters.primary(DURABLE_SETTINGS)
    except (ClusterUnavailable, OSError) as exc:
        pytest.fail(f"could not start the durable test cluster: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        clusters.destroy_all()
