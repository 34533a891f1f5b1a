"""PostgreSQL 15+ journal: the production authority of delivery operations.

``open_postgres_journal(dsn, schema=..., markers=...)`` connects a pool, applies the bundled
forward-only migrations to ``schema`` and returns a DeliveryJournalPort. Options:

* ``zero_rpo``: a ZeroRpoPolicy; critical transactions then need a streaming synchronous
  standby and commit under ``synchronous_commit = remote_apply`` with a bounded wait;
* ``require_zero_rpo``: True refuses to open without a ``zero_rpo`` policy;
* ``contract``: the design contract (default: the bundled one);
* ``min_connections`` / ``max_connections``: pool bounds (default 1 / 4);
* ``connect_timeout_s``: pool open/checkout timeout (default 30);
* ``durability``: ``Durability.DURABLE`` (default) checks at open that the server fsyncs and pins
  every critical transaction durable (SET LOCAL synchronous_commit, fsync checked), refusing with
  JournalDurabilityNotProven otherwise; ``Durability.NON_DURABLE_TESTS_ONLY`` skips that, for
  tests that are not about durability (never used by a CLI; refused together with ``zero_rpo``);
* ``fault_hook``: test hook called at named points inside transactions;
* ``read_only``: inspection: nothing is created or migrated (the schema must exist at the code's
  version, else JournalSchemaMismatch / NotAJournal) and every session is
  ``default_transaction_read_only``.

An unreachable server is said once, at once: one direct connection attempt (bounded by
``connect_timeout_s``) before any pool is built, so a journal down at start is one
JournalUnavailable, not a pool's repeated reconnection warnings.
"""

from __future__ import annotations

import logging
from typing import Any

from sink.design.query import DesignContract, load_design_contract
from sink.journal.durability import NON_DURABLE_WARNING, Durability
from sink.journal.markers import MarkerStore
from sink.journal.port import DeliveryJournalPort, JournalConfigurationError
from sink.journal.postgres.adapter import PostgresJournal
from sink.journal.postgres.base import FaultHook
from sink.journal.postgres.connection import JournalConnections
from sink.journal.postgres.schema import (
    ensure_btree_gist,
    existing_schema,
    migrate,
    probe,
    validate_schema_name,
)
from sink.journal.postgres.zero_rpo import ZeroRpoPolicy

__all__ = ["Durability", "PostgresJournal", "ZeroRpoPolicy", "open_postgres_journal"]

LOG = logging.getLogger(__name__)


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
    durability: Durability = Durability.DURABLE,
    read_only: bool = False,
    **unknown: Any,
) -> DeliveryJournalPort:
    if unknown:
        raise JournalConfigurationError(f"unknown PostgreSQL journal option(s): {', '.join(sorted(unknown))}")
    if require_zero_rpo and zero_rpo is None:
        raise JournalConfigurationError("zero-RPO is required: pass zero_rpo=ZeroRpoPolicy(...)")
    durability = Durability(durability)
    if durability is not Durability.DURABLE:
        if zero_rpo is not None:
            raise JournalConfigurationError("zero-RPO needs a durable journal: drop the non-durable tests-only mode")
        LOG.warning(NON_DURABLE_WARNING)
    if not 1 <= min_connections <= max_connections:
        raise JournalConfigurationError("need 1 <= min_connections <= max_connections")
    validate_schema_name(schema)
    design = contract if contract is not None else load_design_contract()
    probe(dsn, connect_timeout_s)
    if read_only:
        version, extension_schema = existing_schema(dsn, schema, connect_timeout_s)
        connections = JournalConnections(
            dsn, search_path=f"{schema},{extension_schema}", min_size=1, max_size=max_connections,
            zero_rpo=None, connect_timeout_s=connect_timeout_s, durability=durability, read_only=True,
        )
        connections.open(connect_timeout_s)
        return PostgresJournal(connections, schema=schema, markers=markers, contract=design, version=version,
                               fault_hook=fault_hook)
    # Bootstrap on a plain pool connection, then reopen the pool with the final search_path.
    bootstrap = JournalConnections(dsn, search_path="public", min_size=1, max_size=1, zero_rpo=None,
                                   connect_timeout_s=connect_timeout_s, durability=durability)
    bootstrap.open(connect_timeout_s)
    try:
        bootstrap.check_settings()  # before anything is written: a lossy server is refused at open
        with bootstrap.connection() as conn:
            extension_schema = ensure_btree_gist(conn)
            version = migrate(conn, schema, extension_schema)
    finally:
        bootstrap.close()
    connections = JournalConnections(
        dsn, search_path=f"{schema},{extension_schema}", min_size=min_connections, max_size=max_connections,
        zero_rpo=zero_rpo, connect_timeout_s=connect_timeout_s, durability=durability,
    )
    connections.open(connect_timeout_s)
    return PostgresJournal(connections, schema=schema, markers=markers, contract=design, version=version,
                           fault_hook=fault_hook)
