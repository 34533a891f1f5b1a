"""PostgreSQL 15+ journal: the production authority of delivery operations.

``open_postgres_journal(dsn, schema=..., markers=...)`` connects a pool, applies the bundled
forward-only migrations to ``schema`` and returns a DeliveryJournalPort. Options:

* ``zero_rpo``: a ZeroRpoPolicy; critical transactions then need a streaming synchronous
  standby and commit under ``synchronous_commit = remote_apply`` with a bounded wait;
* ``require_zero_rpo``: True refuses to open without a ``zero_rpo`` policy;
* ``contract``: the design contract (default: the bundled one);
* ``min_connections`` / ``max_connections``: pool bounds (default 1 / 4);
* ``connect_timeout_s``: pool open/checkout timeout (default 30);
* ``fault_hook``: test hook called at named points inside transactions.
"""

from __future__ import annotations

from typing import Any

from sink.design.query import DesignContract, load_design_contract
from sink.journal.markers import MarkerStore
from sink.journal.port import DeliveryJournalPort, JournalConfigurationError
from sink.journal.postgres.adapter import PostgresJournal
from sink.journal.postgres.base import FaultHook
from sink.journal.postgres.connection import JournalConnections
from sink.journal.postgres.schema import ensure_btree_gist, migrate, validate_schema_name
from sink.journal.postgres.zero_rpo import ZeroRpoPolicy

__all__ = ["PostgresJournal", "ZeroRpoPolicy", "open_postgres_journal"]


def open_postgres_journal(
    dsn: str,
    *,
    schema: str,
    markers: MarkerStore,
    zero_rpo: ZeroRpoPolicy | None = None,
    require_zero_rpo: bool = False,
    contract: DesignContract | None = None,
    min_connections: int = 1,
    max_connections: int = 4,
    connect_timeout_s: float = 30.0,
    fault_hook: FaultHook | None = None,
    **unknown: Any,
) -> DeliveryJournalPort:
    if unknown:
        raise JournalConfigurationError(f"unknown PostgreSQL journal option(s): {', '.join(sorted(unknown))}")
    if require_zero_rpo and zero_rpo is None:
        raise JournalConfigurationError("zero-RPO is required: pass zero_rpo=ZeroRpoPolicy(...)")
    if not 1 <= min_connections <= max_connections:
        raise JournalConfigurationError("need 1 <= min_connections <= max_connections")
    validate_schema_name(schema)
    design = contract if contract is not None else load_design_contract()
    # Bootstrap on a plain pool connection, then reopen the pool with the final search_path.
    bootstrap = JournalConnections(dsn, search_path="public", min_size=1, max_size=1, zero_rpo=None,
                                   connect_timeout_s=connect_timeout_s)
    bootstrap.open(connect_timeout_s)
    try:
        with bootstrap.connection() as conn:
            extension_schema = ensure_btree_gist(conn)
            version = migrate(conn, schema, extension_schema)
    finally:
        bootstrap.close()
    connections = JournalConnections(
        dsn, search_path=f"{schema},{extension_schema}", min_size=min_connections, max_size=max_connections,
        zero_rpo=zero_rpo, connect_timeout_s=connect_timeout_s,
    )
    connections.open(connect_timeout_s)
    return PostgresJournal(connections, schema=schema, markers=markers, contract=design, version=version,
                           fault_hook=fault_hook)
