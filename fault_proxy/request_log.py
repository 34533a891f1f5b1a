"""The proxy's request log: one record per request (or refused connection) with the phase it reached.

Nothing secret enters a record: header NAMES only (never values), the path without its query
string (query parameter names only), and body sizes with SHA-256 digests instead of bodies.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Literal

# Ordered phases; ``phase`` in a record is the furthest one reached.
PHASES: tuple[str, ...] = (
    "connect",
    "request_headers",
    "request",
    "forwarded",
    "response_headers",
    "response",
    "delivered",
)

Forwarded = Literal["no", "attempted", "yes"]


@dataclass
class FaultNote:
    rule_id: str
    action: str
    phase: str
    detail: dict[str, object] = field(default_factory=dict)


@dataclass
class RequestRecord:
    seq: int
    connection_id: str
    client: str
    phase: str = "connect"
    method: str | None = None
    path: str | None = None
    query_names: list[str] = field(default_factory=list)
    request_header_names: list[str] = field(default_factory=list)
    request_body_bytes: int | None = None
    request_body_sha256: str | None = None
    # "no": the proxy stopped it before using an upstream connection; "attempted": handed to the
    # proxy core for forwarding, no proof it arrived; "yes": complete request written to the
    # upstream connection (streamed) or the receiver answered.
    forwarded: Forwarded = "no"
    upstream_status: int | None = None
    response_header_names: list[str] = field(default_factory=list)
    upstream_body_bytes: int | None = None
    upstream_body_sha256: str | None = None
    status_sent: int | None = None
    response_body_bytes_sent: int = 0
    response_head_sent: bool = False
    synthetic: bool = False
    # Who produced the answer handed to the client: "upstream" (the receiver's), "fault" (a status
    # fault's), "proxy" (the proxy's own problem+json, e.g. upstream unreachable), None (no answer).
    response_source: str | None = None
    faults: list[FaultNote] = field(default_factory=list)
    error: str | None = None
    timestamps: dict[str, float] = field(default_factory=dict)

    def reach(self, phase: str) -> None:
        """Advance to ``phase`` (never backwards) and stamp the time it was first reached."""
        self.timestamps.setdefault(phase, round(time.time(), 6))
        if PHASES.index(phase) > PHASES.index(self.phase):
            self.phase = phase

    def stamp(self, event: str) -> None:
        self.timestamps.setdefault(event, round(time.time(), 6))

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class RequestLog:
    """Bounded in-memory log; the oldest records drop first (``dropped`` counts them)."""

    capacity: int = 10_000
    records: deque[RequestRecord] = field(default_factory=deque)
    next_seq: int = 1
    dropped: int = 0

    def new(self, connection_id: str, client: str) -> RequestRecord:
        record = RequestRecord(seq=self.next_seq, connection_id=connection_id, client=client)
        record.reach("connect")
        self.next_seq += 1
        self.records.append(record)
        if len(self.records) > self.capacity:
            self.records.popleft()
            self.dropped += 1
        return record

    def since(self, seq: int) -> list[RequestRecord]:
        return [r for r in self.records if r.seq > seq]

    def reset(self) -> None:
        # Sequence numbers keep growing so a reader polling with ``since`` never sees a reused number.
        self.records.clear()
        self.dropped = 0
