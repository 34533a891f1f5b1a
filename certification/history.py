"""One row's history for one sink: what the wire, the proxy, the receiver and the sink each showed.

In the spirit of Jepsen: the checkers read only this record, so they judge any sink. Its sources are
the harness's own: the wire tap (what left the sink, attributed to days by the harness's reader of
the receiver's contract), the fault proxy's log (what it forwarded and handed back), the receiver's
ledger (effects, and the content it holds per day compared with the dataset as the harness reads
it), and the sink's own reports (exit codes and claims: judged, never trusted). A history holds
days, digests and counts, never a row or a value.

The unit of judgement is the *day* of the delivered scope: a sink may batch or split as it likes,
the days it changed and the content they hold are what count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from certification.canonical_json import canonical_bytes, sha256_hex


class Ending(StrEnum):
    """How a delivery ended, from the harness's observation (exit codes, steps run, ground truth)."""

    FIRST_RUN = "first_run"
    """Completed by the first run, no restart, no operator."""
    RECOVERY = "recovery"
    """Completed after one or more recovery runs (an orchestrator's rerun), no operator step."""
    OPERATOR = "operator"
    """Completed after an operator step (a reconciliation against the receiver)."""
    BLOCKED = "blocked"
    """Not completed: the last run did not end in exit 0 with every day's content in place."""


class RunKind(StrEnum):
    FIRST = "first"
    RECOVERY = "recovery"
    OPERATOR = "operator"


@dataclass(frozen=True, slots=True)
class WireRequest:
    """One mutation request as it left the sink (tap) and fared at the proxy."""

    seq: int
    at: float
    run: int
    """Which run sent it (1-based), by time; 0 when outside every run."""
    endpoint: str
    method: str
    targets: tuple[str, ...] | None
    """Days it may change at the receiver; None: unknown (treated as every day)."""
    target_source: str
    fence: str | None
    """Digest of the fence value the receiver deduplicates on (None: none)."""
    head_complete: bool
    body_complete: bool
    forwarded: str
    """From the proxy's log: ``no``, ``attempted``, ``yes``, or ``unlogged`` (no entry matched)."""
    response_delivered: bool
    faults: tuple[str, ...] = ()
    """The proxy's fault notes on it, ``action@phase``."""
    marked: bool = False
    """The tap marked it as the row's fault target."""


@dataclass(frozen=True, slots=True)
class Effect:
    """One effect in the receiver's ledger."""

    seq: int
    resource: str
    days: tuple[str, ...]
    """Days its range covers (a partition replacement), or the days its rows carry."""
    fence: str | None
    rows: int


@dataclass(frozen=True, slots=True)
class DayState:
    """One day's content at the receiver against the dataset, at one moment."""

    day: str
    expected_rows: int
    actual_rows: int
    missing: int
    """Expected rows the receiver does not hold."""
    surplus: int
    """Extra copies of expected rows (an append applied twice)."""
    foreign: int
    """Rows that match no row of the dataset (a changed value, an extra field)."""
    digest: str

    @property
    def correct(self) -> bool:
        return not (self.missing or self.surplus or self.foreign)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The receiver's content right after one run (``after_run``), or settled (``after_run`` 0): after
    the harness advanced the receiver's clock so every job it still held could finish."""

    after_run: int
    days: tuple[DayState, ...]
    outside_rows: int
    """Rows the receiver holds outside the delivered scope."""
    open_jobs: int

    def day(self, name: str) -> DayState | None:
        return next((state for state in self.days if state.day == name), None)


@dataclass(frozen=True, slots=True)
class Run:
    index: int
    kind: RunKind
    exit_code: int
    """Negative: killed by that signal."""
    timed_out: bool
    """The harness killed it after its time limit: a hang, never the row's fault."""
    started_at: float
    ended_at: float
    claims: Mapping[str, str] = field(default_factory=dict)
    """day -> what the sink said of it: ``completed``, ``unknown``, ``partial``, ``failed``."""
    result_problem: str | None = None
    """The result the sink declares was missing or not in its documented shape."""
    checkpoint: str | None = None
    """The first day the sink's source checkpoint does not cover: it claims every earlier day delivered."""
    stated: tuple[str, ...] = ()
    """The stable codes its result states (``sinks.stated_codes``): for the reader, never for a checker."""


@dataclass(frozen=True, slots=True)
class FaultEvidence:
    kind: str
    fired: bool | None
    """Did the row's fault act on this sink? None: the fault has nothing to fire (no fault)."""
    detail: str = ""
    target_day: str | None = None


@dataclass(frozen=True, slots=True)
class Completeness:
    """Whether each witness is whole; a history with a gap can prove nothing valid."""

    proxy_log_dropped: int = 0
    tap_overflow: bool = False
    ledger_read: bool = True
    unmatched_proxy_entries: int = 0
    """Mutation entries of the proxy's log that no recorded client request explains."""
    receiver_in_flight: int = 0
    """Data requests the receiver was still working on when the judge stopped waiting to read it."""


@dataclass(frozen=True, slots=True)
class History:
    row_id: str
    sink: str
    universe: tuple[str, ...]
    expected_digest: str
    mutation_kind: str
    fence_deduplicates: bool
    """The receiver's fence certifiably deduplicates a same-key repeat (from its behaviour file)."""
    requests: tuple[WireRequest, ...]
    effects: tuple[Effect, ...]
    snapshots: tuple[Snapshot, ...]
    runs: tuple[Run, ...]
    fault: FaultEvidence
    completeness: Completeness = field(default_factory=Completeness)

    def snapshot_after(self, run: int) -> Snapshot | None:
        return next((snapshot for snapshot in self.snapshots if snapshot.after_run == run), None)

    @property
    def settled(self) -> Snapshot | None:
        return self.snapshot_after(0)

    def completed(self) -> bool:
        """The last run ended 0 and every day held exactly the dataset's content right after it."""
        if not self.runs or self.runs[-1].exit_code != 0:
            return False
        snapshot = self.snapshot_after(self.runs[-1].index)
        return snapshot is not None and all(state.correct for state in snapshot.days)

    def ending(self) -> Ending:
        if not self.completed():
            return Ending.BLOCKED
        if any(run.kind is RunKind.OPERATOR for run in self.runs):
            return Ending.OPERATOR
        return Ending.FIRST_RUN if len(self.runs) == 1 else Ending.RECOVERY

    def canonical(self) -> dict[str, object]:
        document = asdict(self)
        document["runs"] = [{**run, "claims": dict(sorted(run["claims"].items()))} for run in document["runs"]]
        document["ending"] = self.ending().value
        return _rounded(document)  # type: ignore[return-value]

    def digest(self) -> str:
        return "sha256:" + sha256_hex(canonical_bytes(self.canonical()))


def _rounded(value: object) -> object:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(item) for item in value]
    return value
