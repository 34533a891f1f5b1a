"""Which journal the sink under test uses, and who starts it (``certify run --journal``).

* ``sqlite`` (the default): nothing to start; a journal-using sink keeps its embedded SQLite journal
  in the row's own state directory, as it always did.
* ``postgres``: ONE throwaway cluster for the whole run, started from the server binaries by the
  launcher the tests use (``sink.journal.postgres.cluster``: infrastructure, not judgement; nothing
  it does decides a verdict), destroyed at the end of the run, also after an error or Ctrl-C.
* ``postgresql://…`` (or ``postgres://…``): a server the caller runs, used as given.

Every row-and-sink run that uses a journal gets a database of its own, created when the run is
prepared, so no journal state is shared across rows (the reference sink would otherwise resume an
earlier row's admitted parent). Databases rather than schemas because ``delivery run`` takes a DSN,
not a schema: the DSN's database is the one thing a sink file can change per run. On a given server
the role therefore needs CREATEDB; the run drops the databases it created when it ends.

A DSN may carry a password: it is never printed, logged or recorded. The signed artifacts record
only the backend (``sqlite`` or ``postgresql``) and who provided it.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, urlsplit, urlunsplit

from sink.journal.postgres.cluster import Cluster, ClusterUnavailable, find_server_binaries, start_primary

ChoiceKind = Literal["sqlite", "postgres", "dsn"]
JOURNAL_ARGS = "journal_args"
"""The sink-file placeholder: a whole argument that expands to ``--journal DSN`` or to nothing."""
CONNECT_TIMEOUT_S = 10
_DATABASE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}\Z")


class JournalChoiceError(ValueError):
    """``--journal`` names no journal the harness knows (invalid input: exit 2)."""


class JournalUnavailable(RuntimeError):
    """The chosen journal cannot be provided. ``missing_binaries``: the PostgreSQL server binaries are
    not installed (invalid for this machine: exit 2); otherwise the server is unavailable (exit 3)."""

    def __init__(self, message: str, *, missing_binaries: bool = False) -> None:
        super().__init__(message)
        self.missing_binaries = missing_binaries


@dataclass(frozen=True, slots=True)
class JournalChoice:
    kind: ChoiceKind
    dsn: str | None = field(default=None, repr=False)

    @property
    def backend(self) -> str:
        """The backend as the fault space names it (``certification.coverage.JOURNALS``)."""
        return "sqlite" if self.kind == "sqlite" else "postgres"

    def facts(self) -> dict[str, str]:
        """What the signed artifacts record: the backend and who provided it (never the DSN)."""
        provider = {"sqlite": "embedded", "postgres": "throwaway_cluster", "dsn": "given_dsn"}[self.kind]
        return {"backend": "postgresql" if self.backend == "postgres" else "sqlite", "provided_by": provider}


def parse_journal_choice(value: str) -> JournalChoice:
    """``sqlite``, ``postgres`` or a ``postgresql://`` DSN (JournalChoiceError otherwise; its message
    never repeats the value, which may hold a password)."""
    if value in ("sqlite", "postgres"):
        return JournalChoice(value)  # type: ignore[arg-type]
    if value.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(value)
        if not parts.hostname:
            raise JournalChoiceError("--journal DSN must name a host (postgresql://USER@HOST:PORT/DATABASE)")
        return JournalChoice("dsn", value)
    raise JournalChoiceError("--journal must be sqlite, postgres or a postgresql:// DSN")


def _with_database(dsn: str, database: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, "/" + quote(database), parts.query, ""))


def _scrubbed(text: str, dsn: str | None) -> str:
    """An error text without the DSN's password (drivers may echo parts of a connection string)."""
    password = urlsplit(dsn).password if dsn else None
    first_line = (text.splitlines() or [""])[0][:300]
    return first_line.replace(password, "***") if password else first_line


class JournalProvider:
    """Hands each row-and-sink run the arguments that point its sink at its own journal."""

    backend = "sqlite"

    def arguments(self) -> tuple[str, ...]:
        """``--journal …`` for one new run (a fresh journal), or nothing for the sink's embedded default."""
        return ()

    def close(self) -> None:
        """Release what the provider created (idempotent)."""


class PostgresJournals(JournalProvider):
    """A database per run on one server: the throwaway cluster (``cluster``) or a given DSN."""

    backend = "postgres"

    def __init__(self, admin_dsn: str, cluster: Cluster | None = None) -> None:
        self._admin_dsn, self._cluster = admin_dsn, cluster
        self._prefix = f"restproof_cert_{secrets.token_hex(4)}"
        self._created: list[str] = []
        self._lock = threading.Lock()

    def _execute(self, statement: Any) -> None:
        import psycopg  # noqa: PLC0415 - only a PostgreSQL run needs the driver

        try:
            with psycopg.connect(self._admin_dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
                conn.execute(statement)
        except psycopg.Error as exc:
            raise JournalUnavailable(f"the journal server refused: {_scrubbed(str(exc), self._admin_dsn)}") from None

    def probe(self) -> None:
        self._execute("SELECT 1")

    def arguments(self) -> tuple[str, ...]:
        from psycopg import sql  # noqa: PLC0415

        with self._lock:  # lanes prepare runs concurrently; names and the list stay consistent
            name = f"{self._prefix}_{len(self._created) + 1}"
            assert _DATABASE_NAME.fullmatch(name)
            self._execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            self._created.append(name)
        return ("--journal", _with_database(self._admin_dsn, name))

    def close(self) -> None:
        from psycopg import sql  # noqa: PLC0415

        if self._cluster is not None:
            self._cluster.destroy()  # the whole server goes: nothing to drop one by one
            self._cluster = None
            return
        with self._lock:
            created, self._created = self._created, []
        for name in created:  # a given server keeps nothing the run made
            with suppress(JournalUnavailable):
                self._execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _throwaway_cluster() -> PostgresJournals:
    try:
        find_server_binaries()
    except ClusterUnavailable as exc:
        raise JournalUnavailable(str(exc), missing_binaries=True) from None
    try:
        # The server's defaults keep fsync and synchronous_commit on: the journal refuses a lossy server.
        cluster = start_primary({"max_connections": 200}, name="certify")
    except (ClusterUnavailable, OSError) as exc:
        raise JournalUnavailable(f"the throwaway PostgreSQL cluster did not start: {_scrubbed(str(exc), None)}"
                                 ) from None
    dsn = f"postgresql://postgres@127.0.0.1:{cluster.port}/postgres?connect_timeout={CONNECT_TIMEOUT_S}"
    return PostgresJournals(dsn, cluster)


@contextmanager
def journal_provider(choice: JournalChoice) -> Iterator[JournalProvider]:
    """The provider for the whole run; whatever it started or created is gone when the block ends,
    however it ends (an error, Ctrl-C)."""
    if choice.kind == "sqlite":
        yield JournalProvider()
        return
    provider = _throwaway_cluster() if choice.kind == "postgres" else PostgresJournals(str(choice.dsn))
    try:
        provider.probe()  # an unreachable server fails the run before any row starts
        yield provider
    finally:
        provider.close()
