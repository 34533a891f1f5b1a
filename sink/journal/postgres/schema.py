"""Forward-only schema migrations of the PostgreSQL journal.

Migrations are the numbered ``migrations/NNNN_*.sql`` files shipped with the package. Opening a
journal applies the missing ones in order, in one transaction together with their
``schema_version`` rows, serialised across processes by a transaction-scoped advisory lock (the
only advisory lock in the adapter; effect domains use lock rows). A database whose version is
newer than the code refuses to open.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import psycopg
from psycopg import sql

from sink.journal.port import (
    SCHEMA_VERSION_TABLE,
    JournalConfigurationError,
    JournalSchemaMismatch,
    JournalUnavailable,
    NotAJournal,
)

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}\Z")
_MIGRATION_FILE = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql\Z")
# Any fixed 64-bit key: serialises concurrent migrators of every journal schema in the database.
_MIGRATION_LOCK_KEY = 0x7265737470726F6F  # "restproo"


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql_text: str


def validate_schema_name(schema: str) -> str:
    if not _SCHEMA_NAME.match(schema):
        raise JournalConfigurationError(
            "schema must be 1-63 characters of lowercase letters, digits and '_', not starting with a digit"
        )
    return schema


def bundled_migrations() -> tuple[Migration, ...]:
    folder = resources.files("sink.journal.postgres").joinpath("migrations")
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    if not found or [m.version for m in found] != list(range(1, len(found) + 1)):
        raise JournalConfigurationError("bundled migrations are missing or not numbered 1..n without gaps")
    return tuple(found)


def ensure_btree_gist(conn: psycopg.Connection[tuple[object, ...]]) -> str:
    """Create btree_gist if missing; return the schema holding it (added to every search_path)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK_KEY,))
        conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gist")
        row = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'btree_gist'"
        ).fetchone()
    if row is None:  # pragma: no cover - CREATE EXTENSION just succeeded
        raise JournalConfigurationError("btree_gist extension unavailable")
    return str(row[0])


def migrate(conn: psycopg.Connection[tuple[object, ...]], schema: str, extension_schema: str) -> int:
    """Apply missing migrations to `schema`; return the resulting schema version."""
    migrations = bundled_migrations()
    known = migrations[-1].version
    search_path = sql.SQL("SET LOCAL search_path TO {}, {}").format(
        sql.Identifier(schema), sql.Identifier(extension_schema)
    )
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK_KEY,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        conn.execute(search_path)
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (version integer PRIMARY KEY, name text NOT NULL, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            ).format(sql.Identifier(SCHEMA_VERSION_TABLE))
        )
        row = conn.execute(
            sql.SQL("SELECT coalesce(max(version), 0) FROM {}").format(sql.Identifier(SCHEMA_VERSION_TABLE))
        ).fetchone()
        current = int(str(row[0])) if row else 0
        if current > known:
            raise JournalConfigurationError(
                f"journal schema version {current} is newer than this code ({known}); upgrade the code"
            )
        for migration in migrations:
            if migration.version <= current:
                continue
            conn.execute(migration.sql_text.encode("utf-8"))
            conn.execute(
                sql.SQL("INSERT INTO {} (version, name) VALUES (%s, %s)").format(
                    sql.Identifier(SCHEMA_VERSION_TABLE)
                ),
                (migration.version, migration.name),
            )
        return known


def probe(dsn: str, connect_timeout_s: float) -> None:
    """One direct connection attempt: an unreachable server is JournalUnavailable at once."""
    try:
        psycopg.connect(dsn, connect_timeout=max(1, int(connect_timeout_s)), autocommit=True).close()
    except psycopg.Error as exc:
        raise JournalUnavailable(f"journal database unreachable: {type(exc).__name__}") from None


def existing_schema(dsn: str, schema: str, connect_timeout_s: float) -> tuple[int, str]:
    """For read-only use: the journal schema's version and btree_gist's schema, read without writing.

    A schema that does not exist or is not a restproof journal is NotAJournal; a version other
    than this code's is JournalSchemaMismatch (a read-only command never migrates)."""
    known = bundled_migrations()[-1].version
    with psycopg.connect(dsn, connect_timeout=max(1, int(connect_timeout_s)), autocommit=True) as conn:
        conn.execute("SET default_transaction_read_only = on")
        found = conn.execute(
            "SELECT to_regclass(format('%%I.%%I', %s::text, %s::text)) IS NOT NULL, "
            "(SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'btree_gist')", (schema, SCHEMA_VERSION_TABLE),
        ).fetchone()
        if found is None or not found[0]:
            raise NotAJournal(f"schema {schema} holds no restproof journal")
        row = conn.execute(
            sql.SQL("SELECT coalesce(max(version), 0) FROM {}.{}").format(
                sql.Identifier(schema), sql.Identifier(SCHEMA_VERSION_TABLE))
        ).fetchone()
    version = int(str(row[0])) if row else 0
    if version != known:
        newer = version > known
        raise JournalSchemaMismatch(
            f"journal schema version {version} is {'newer' if newer else 'older'} than this code ({known}); "
            + ("upgrade the code" if newer else "open it once with a writing command (run or resume) to migrate it")
        )
    return version, str(found[1] or "public")
