"""The composition root of the delivery runtime: the one place that builds adapters.

From a compiled plan and the operator's locations (journal, artifact store, marker store) it opens
the journal, the MAY_ATTEMPT marker store, the content-addressed artifact store, the credential
seam and the httpx transport to the binding's fixed authority, and hands them to the supervisor as
ports. Secrets are resolved by the transport's auth provider at send time, in this process only.
"""

from __future__ import annotations

import os
import re
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from sink.artifacts.local import LocalArtifactStore
from sink.contracts.plan import CompiledPlan
from sink.design.query import load_design_contract
from sink.journal.markers import FileMarkerStore, MarkerStore
from sink.journal.port import DeliveryJournalPort, JournalConfigurationError, JournalRejection
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

_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
DEFAULT_CAPACITY_SLOTS = 1


@dataclass(frozen=True, slots=True)
class Locations:
    """Where durable authority lives. ``journal``: ``sqlite:PATH`` or a ``postgresql://`` DSN."""

    journal: str
    artifacts: Path
    markers: Path
    pg_schema: str = "restproof_journal"

    @classmethod
    def under(cls, state_dir: Path, journal: str | None = None) -> Locations:
        """The embedded defaults: everything in one state directory (SQLite journal)."""
        return cls(journal or f"sqlite:{state_dir / 'journal.sqlite3'}", state_dir / "artifacts",
                   state_dir / "markers")


def open_journal(locations: Locations, markers: MarkerStore) -> DeliveryJournalPort:
    spec = locations.journal
    if spec.startswith("sqlite:"):
        from sink.journal.sqlite.adapter import open_sqlite_journal  # noqa: PLC0415

        path = Path(spec.removeprefix("sqlite:"))
        path.parent.mkdir(parents=True, exist_ok=True)
        return open_sqlite_journal(path, markers=markers)
    if spec.startswith(("postgresql://", "postgres://")):
        if not _SCHEMA.fullmatch(locations.pg_schema):
            raise JournalConfigurationError("the journal schema name must be a plain lower-case identifier")
        from sink.journal.postgres import open_postgres_journal  # noqa: PLC0415

        return open_postgres_journal(spec, schema=locations.pg_schema, markers=markers)
    raise JournalConfigurationError("--journal must be sqlite:PATH or a postgresql:// DSN")


def capacity_scope(plan: CompiledPlan) -> str:
    """One remote-job capacity scope per physical effect domain and profile (seed: the semaphore
    lives in the journal, keyed by the certified endpoint/principal scope)."""
    return f"jobs.{plan.profile.id}.{plan.digests.effect_conflict_domain.removeprefix('sha256:')[:32]}"


class Runtime:
    """Everything one delivery process needs, opened once, closed once."""

    def __init__(self, plan: CompiledPlan, locations: Locations, *, worker_id: str, wait_for_async: bool = True,
                 lease_ttl: timedelta = timedelta(seconds=30), failpoints: Failpoints | None = None) -> None:
        self._stack = ExitStack()
        self.plan = plan
        # First: a binding its policies refuse (exit 2) must not have opened anything.
        # One pooled connection per child in flight at once (never fewer than the transport's default).
        wire = open_binding_transport(plan.binding, timeouts=plan.operation.timeouts,
                                      policies=PolicyStore.from_environ(os.environ), resolver=default_registry(),
                                      max_connections=max(8, sync_child_width(plan.operation)))
        self._stack.callback(wire.close)
        self.markers = FileMarkerStore(locations.markers)
        self.store = LocalArtifactStore(locations.artifacts)
        self.journal = open_journal(locations, self.markers)
        self._stack.callback(self.journal.close)
        self.failpoints = failpoints if failpoints is not None else Failpoints.from_environ(os.environ)
        self.scope = capacity_scope(plan)
        limits = plan.operation.rate_limits
        # Async: the receiver's job concurrency. Sync: the active-request bound (each request is its
        # own remote effect; an unknown one keeps its slot until reconciled).
        wanted = limits.max_active_remote_jobs if plan.operation.protocol_family == "async_bulk_job" \
            else limits.max_active_requests
        slots = max(DEFAULT_CAPACITY_SLOTS, wanted)
        try:
            configured = self.journal.capacity_status(self.scope).slots
        except JournalRejection:
            configured = None  # first use of this scope
        if configured != slots:
            self.journal.configure_capacity(self.scope, slots)
        clock = SystemClock()
        self.ports = SupervisorPorts(
            journal=self.journal, markers=self.markers, transport=wire.transport,
            requests=ArtifactChildRequests(plan, self.store), contract=load_design_contract(),
            jitter_for=DigestJitter, clock=clock, failpoint=self.failpoints.hit,
            submit_gate=gate_from_environ(os.environ, profile_contract_digest=plan.digests.profile_contract_digest,
                                          binding_digest=plan.digests.receiver_binding_semantics_digest),
            limiter=journal_rate_limiter(plan, self.journal, clock),
        )
        self.config = SupervisorConfig(worker_id=worker_id, profile=plan.operation, capacity_scope=self.scope,
                                       lease_ttl=lease_ttl, wait_for_async=wait_for_async)
        self.supervisor = Supervisor(self.ports, self.config)

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
