"""The journal server dies under the sink (``journal_kill``): the production journal's own fault.

The row's sink gets a PostgreSQL cluster of its own, started from the server binaries for this one
row-and-sink run (the run's shared cluster serves the other lanes, which must not lose their
server). The first run is armed with ``RESTPROOF_FAILPOINT=<point>`` and
``RESTPROOF_FAILPOINT_ACTION=stop``: the worker freezes itself at the named point (a journal write
not yet sent, ``.before``, or one whose commit was acknowledged, ``.after``; a request boundary).
The harness, seeing it frozen, kills the journal server (SIGKILL to the postmaster, or
``pg_ctl -m immediate``: no checkpoint, crash recovery at the next start) and lets the worker go on
into the outage. The server stays down until the first run ends, or ``OUTAGE_S`` at most (a worker
that waits for its journal to return may then go on), and comes back on the same data directory:
what was acknowledged is there, what was not is not. Recovery runs follow as for every row.

What decides the row is the same as everywhere: the receiver's ledger, the proxy's log and the
wire tap. Whether the fault fired is what the harness itself did: the worker was seen frozen at
the point and the server was killed and restarted.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any

from certification.faults import NO_FAILPOINTS, FaultContext, RowFault
from certification.history import FaultEvidence
from certification.procfs import children_of, process_state, until_gone
from certification.scenarios import Fault
from certification.sinks import Finished, Launched
from sink.journal.postgres.cluster import Cluster, ClusterUnavailable, start_primary
from sink.runtime.failpoints import ACTION_ENV_VAR as FAILPOINT_ACTION_ENV
from sink.runtime.failpoints import ENV_VAR as FAILPOINT_ENV

OUTAGE_S = 30.0
"""The longest the server stays down while the first run is alive (then it returns under it)."""
RESTART_WITHIN_S = 20.0
"""A SIGKILLed postmaster's backends notice its death and exit; until they have, the shared memory
is still attached and a new postmaster refuses to start. They exit within a second or two."""
FREEZE_POLL_S = 0.01
BACKENDS_EXIT_S = 10.0
"""How long a SIGKILLed postmaster's backends get to notice its death and exit before the frozen
worker is let go; any still alive then is killed too."""


class JournalServer:
    """One throwaway cluster that the fault may kill and must bring back on the same data."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    @classmethod
    def start(cls) -> JournalServer:
        return cls(start_primary({"max_connections": 40}, name="journal-kill"))

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.cluster.port}/postgres?connect_timeout=10"

    def _postmaster_pid(self) -> int:
        return int((self.cluster.data_dir / "postmaster.pid").read_text().splitlines()[0])

    def kill(self, mode: str) -> None:
        if mode == "immediate":
            self.cluster.stop("immediate")
            return
        postmaster = self._postmaster_pid()
        backends = children_of(postmaster)
        os.kill(postmaster, signal.SIGKILL)  # the postmaster; its backends follow it ...
        self.cluster.running = False
        # ... but not at once: a backend serves its client until it notices the death. The worker is
        # let go only after they have exited, so that at a `.before` point its write meets a dead server
        # (otherwise an orphaned backend could run the write, even its COMMIT, before exiting: the kill
        # would land between the commit's send and its acknowledgement, another row's fault).
        until_gone(backends, BACKENDS_EXIT_S)

    def restart(self) -> None:
        deadline = time.monotonic() + RESTART_WITHIN_S
        while True:
            try:
                self.cluster.start()
                return
            except ClusterUnavailable:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.3)

    def destroy(self) -> None:
        self.cluster.destroy()


class JournalKillFault(RowFault):
    kind = "journal_kill"

    def __init__(self, spec: Fault, *, server: Callable[[], JournalServer] = JournalServer.start) -> None:
        super().__init__(spec)
        self._start_server = server
        self.server: JournalServer | None = None
        self.frozen = threading.Event()
        self.killed = False
        self.restarted = False
        self.outage_s: float | None = None
        self.failure: str | None = None

    def not_applicable(self, *, uses_journal: bool, failpoints: bool) -> str | None:
        if not uses_journal:
            return "the sink keeps no journal"
        return None if failpoints else NO_FAILPOINTS

    def journal_arguments(self, shared: Callable[[], tuple[str, ...]] | None) -> tuple[str, ...]:
        """A server of the row's own, never the run's shared one (``shared`` is not used)."""
        self.server = self._start_server()
        return ("--journal", self.server.dsn)

    def environment(self, finishes: Sequence[Finished]) -> Mapping[str, str]:
        if finishes:
            return {}  # the first run only: recovery runs meet the server as it came back
        return {FAILPOINT_ENV: str(self.spec.point), FAILPOINT_ACTION_ENV: "stop"}

    def during_first_run(self, ctx: FaultContext, first: Launched) -> None:
        self.thread = threading.Thread(target=self._act, args=(first,), daemon=True)
        self.thread.start()

    def _act(self, first: Launched) -> None:
        server = self.server
        assert server is not None
        while not first.exited():
            if process_state(first.pid) == "T":
                self.frozen.set()
                break
            time.sleep(FREEZE_POLL_S)
        if not self.frozen.is_set():
            return
        killed_at = time.monotonic()
        try:
            server.kill(str(self.spec.mode))
            self.killed = True
        except (OSError, ValueError, ClusterUnavailable) as exc:
            self.failure = f"the journal server could not be killed: {type(exc).__name__}"
        finally:
            with suppress(ProcessLookupError):
                os.kill(first.pid, signal.SIGCONT)  # unreaped: the pid is still the sink's
        while not first.exited() and time.monotonic() - killed_at < OUTAGE_S:
            time.sleep(0.05)
        self._bring_back(server, killed_at)

    def _bring_back(self, server: JournalServer, killed_at: float) -> None:
        if not self.killed:
            return
        try:
            server.restart()
            self.restarted = True
            self.outage_s = round(time.monotonic() - killed_at, 2)
        except ClusterUnavailable as exc:
            self.failure = f"the journal server did not come back: {str(exc).splitlines()[0][:200]}"

    def before_first_reap(self, ctx: FaultContext) -> None:
        thread = getattr(self, "thread", None)
        if thread is not None:
            thread.join(timeout=OUTAGE_S + RESTART_WITHIN_S + 10)

    def restore(self, ctx: FaultContext) -> None:
        if self.server is not None:
            self.server.destroy()
            self.server = None

    def evidence(self, ctx: FaultContext, finishes: Sequence[Finished], log: Sequence[Mapping[str, Any]]
                 ) -> FaultEvidence:
        point, mode = self.spec.point, self.spec.mode
        fired = self.frozen.is_set() and self.killed and self.restarted
        if fired:
            detail = (f"the journal server was killed ({mode}) with the first run frozen at {point}; "
                      f"it was back {self.outage_s} s later")
        elif self.failure is not None:
            detail = self.failure
        else:
            detail = f"the first run never reached {point}"
        return FaultEvidence(self.kind, fired, detail)
