"""The composition root of the ``delivery`` commands: the one place that builds adapters.

Three context-managed openers, used by every command:

* ``open_delivery(plan, locations, settings)``: a delivery process: the journal (read-write), the
  MAY_ATTEMPT marker store, the content-addressed artifact store, the binding's transport (through
  ``sink.security.wire``, whose policies refuse before any connection opens), the rate limiter and
  the supervisor;
* ``open_inspection(locations)``: a read-only view for ``inspect`` and ``resume`` without
  ``--apply``: the journal opened read-only, the marker and artifact stores opened without creating
  anything; ``open_inspection(locations, writable=True)`` the same with the journal writable, for
  an operator's audited decision (no transport: nothing is sent);
* ``open_offline(artifacts)``: the artifact store of an offline command (``preview``, ``bundle``,
  ``gc``): the given directory, or a temporary one removed afterwards.

``--journal`` is parsed here and only here (``parse_journal``): ``sqlite:PATH`` or a
``postgresql://`` DSN. The root writes nothing to the journal (capacity is configured by the
delivery service when it needs it); it refuses a state directory whose files are symbolic links,
and the journal adapters refuse a database that is not a restproof journal.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from sink.artifacts.local import LocalArtifactStore
from sink.contracts.plan import CompiledPlan
from sink.design.query import load_design_contract
from sink.journal.markers import FileMarkerStore, MarkerStore
from sink.journal.port import DeliveryJournalPort, JournalConfigurationError
from sink.runtime.backoff import DigestJitter
from sink.runtime.child_pool import sync_child_width
from sink.runtime.child_requests import ArtifactChildRequests
from sink.runtime.failpoints import Failpoints
from sink.runtime.ports import SupervisorConfig, SupervisorPorts, SystemClock
from sink.runtime.rate_limiter import journal_rate_limiter
from sink.runtime.supervisor import Supervisor
from sink.security.policies import PolicyStore
from sink.security.revocation import gate_from_environ
from sink.security.wire import open_binding_transport
from sink.transport import default_registry

_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}\Z")
DEFAULT_PG_SCHEMA = "restproof_journal"
JOURNAL_FILE = "journal.sqlite3"


class JournalSpecError(JournalConfigurationError):
    code = "cli.invalid_journal"


class StateSymlinkRefused(JournalConfigurationError):
    code = "state.symlink_refused"


@dataclass(frozen=True, slots=True)
class JournalSpec:
    """Where the journal is: a SQLite file or a PostgreSQL DSN (never printed: it may hold a password)."""

    sqlite_path: Path | None = None
    dsn: str | None = None

    def describe(self) -> str:
        if self.sqlite_path is not None:
            return f"sqlite:{self.sqlite_path}"
        parts = urlsplit(self.dsn or "")
        return f"postgresql://{parts.hostname or ''}{'' if parts.port is None else f':{parts.port}'}{parts.path}"


def parse_journal(value: str) -> JournalSpec:
    """``sqlite:PATH`` or a ``postgresql://`` (``postgres://``) DSN; anything else is refused."""
    if value.startswith("sqlite:") and len(value) > len("sqlite:"):
        return JournalSpec(sqlite_path=Path(value.removeprefix("sqlite:")))
    if value.startswith(("postgresql://", "postgres://")):
        return JournalSpec(dsn=value)
    raise JournalSpecError("--journal must be sqlite:PATH or a postgresql:// DSN")


@dataclass(frozen=True, slots=True)
class Locations:
    """Where durable authority lives: the journal, the artifact store, the marker store."""

    journal: JournalSpec
    artifacts: Path
    markers: Path
    pg_schema: str = DEFAULT_PG_SCHEMA

    @classmethod
    def under(cls, state_dir: Path, journal: str | None = None, artifacts: Path | None = None) -> Locations:
        """The embedded defaults: everything in one state directory (SQLite journal)."""
        spec = parse_journal(journal) if journal is not None else JournalSpec(sqlite_path=state_dir / JOURNAL_FILE)
        return cls(spec, artifacts or state_dir / "artifacts", state_dir / "markers")

    def refuse_symlinks(self) -> None:
        """Never follow a symbolic link planted where the sink keeps (or creates) its own files."""
        for path in (self.artifacts, self.markers, *([self.journal.sqlite_path] if self.journal.sqlite_path else [])):
            if path.is_symlink():
                raise StateSymlinkRefused(f"{path.name} is a symbolic link: the sink never follows one in its state")


@dataclass(frozen=True, slots=True)
class RunSettings:
    worker_id: str
    wait_for_async: bool = True
    lease_ttl: timedelta = timedelta(seconds=30)


def open_journal(locations: Locations, markers: MarkerStore, *, read_only: bool = False) -> DeliveryJournalPort:
    spec = locations.journal
    if spec.sqlite_path is not None:
        from sink.journal.sqlite.adapter import open_sqlite_journal  # noqa: PLC0415 - one adapter per process

        return open_sqlite_journal(spec.sqlite_path, markers=markers, read_only=read_only)
    if not _SCHEMA.fullmatch(locations.pg_schema):
        raise JournalSpecError("the journal schema name must be a plain lower-case identifier")
    from sink.journal.postgres import open_postgres_journal  # noqa: PLC0415

    assert spec.dsn is not None
    return open_postgres_journal(spec.dsn, schema=locations.pg_schema, markers=markers, read_only=read_only,
                                 connect_timeout_s=10.0)


def capacity_scope(plan: CompiledPlan) -> str:
    """One remote-job capacity scope per physical effect domain and profile (seed: the semaphore
    lives in the journal, keyed by the certified endpoint/principal scope)."""
    return f"jobs.{plan.profile.id}.{plan.digests.effect_conflict_domain.removeprefix('sha256:')[:32]}"


def capacity_slots(plan: CompiledPlan) -> int:
    """Async: the receiver's job concurrency. Sync: the active-request bound (each request is its
    own remote effect; an unknown one keeps its slot until reconciled)."""
    limits = plan.operation.rate_limits
    wanted = limits.max_active_remote_jobs if plan.operation.protocol_family == "async_bulk_job" \
        else limits.max_active_requests
    return max(1, wanted)


@dataclass
class Inspection:
    """A read-only view of the journal and the artifact store."""

    journal: DeliveryJournalPort
    store: LocalArtifactStore
    markers: FileMarkerStore


@contextmanager
def open_inspection(locations: Locations, *, writable: bool = False) -> Iterator[Inspection]:
    locations.refuse_symlinks()
    markers = FileMarkerStore(locations.markers, create=False)
    journal = open_journal(locations, markers, read_only=not writable)
    try:
        yield Inspection(journal, LocalArtifactStore(locations.artifacts, create=False), markers)
    finally:
        journal.close()


@dataclass
class DeliveryRuntime:
    """Everything one delivery process needs, opened once, closed once."""

    plan: CompiledPlan
    journal: DeliveryJournalPort
    store: LocalArtifactStore
    markers: FileMarkerStore
    failpoints: Failpoints
    ports: SupervisorPorts
    config: SupervisorConfig
    supervisor: Supervisor


@contextmanager
def open_delivery(plan: CompiledPlan, locations: Locations, settings: RunSettings, *,
                  failpoints: Failpoints | None = None) -> Iterator[DeliveryRuntime]:
    locations.refuse_symlinks()
    with ExitStack() as stack:
        # First: a binding its policies refuse (exit 2) must not have opened anything.
        # One pooled connection per child in flight at once (never fewer than the transport's default).
        wire = open_binding_transport(plan.binding, timeouts=plan.operation.timeouts,
                                      policies=PolicyStore.from_environ(os.environ), resolver=default_registry(),
                                      max_connections=max(8, sync_child_width(plan.operation)))
        stack.callback(wire.close)
        markers = FileMarkerStore(locations.markers)
        store = LocalArtifactStore(locations.artifacts)
        journal = open_journal(locations, markers)
        stack.callback(journal.close)
        armed = failpoints if failpoints is not None else Failpoints.from_environ(os.environ)
        clock = SystemClock()
        ports = SupervisorPorts(
            journal=journal, markers=markers, transport=wire.transport,
            requests=ArtifactChildRequests(plan, store), contract=load_design_contract(),
            jitter_for=DigestJitter, clock=clock, failpoint=armed.hit,
            submit_gate=gate_from_environ(os.environ, profile_contract_digest=plan.digests.profile_contract_digest,
                                          binding_digest=plan.digests.receiver_binding_semantics_digest),
            limiter=journal_rate_limiter(plan, journal, clock),
        )
        config = SupervisorConfig(worker_id=settings.worker_id, profile=plan.operation,
                                  capacity_scope=capacity_scope(plan), lease_ttl=settings.lease_ttl,
                                  wait_for_async=settings.wait_for_async)
        supervisor = Supervisor(ports, config)
        stack.callback(supervisor.close)
        yield DeliveryRuntime(plan, journal, store, markers, armed, ports, config, supervisor)


@contextmanager
def open_offline(artifacts: Path | None) -> Iterator[LocalArtifactStore]:
    """The artifact store of an offline command: ``artifacts`` (kept), or a temporary directory."""
    if artifacts is not None:
        if artifacts.is_symlink():
            raise StateSymlinkRefused(f"{artifacts.name} is a symbolic link: the sink never follows one")
        yield LocalArtifactStore(artifacts)
        return
    with tempfile.TemporaryDirectory(prefix="restproof-offline-") as scratch:
        yield LocalArtifactStore(Path(scratch))
