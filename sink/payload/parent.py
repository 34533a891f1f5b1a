"""The frozen parent as planning and sealing read it: one rows artifact and its per-day slices.

``restproof.rest_source_parent.v1`` is written once by the source freeze (sink/source/freeze.py)
and read by everything after it: the planner's histogram, the sealer's verified byte ranges, the
runtime's expected counts. It holds rows already encoded in the profile's payload format, each day
sorted by its encoded bytes, so a child body is a prefix, a byte range of days and a suffix.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from sink.artifacts.documents import read_document
from sink.artifacts.port import ImmutableArtifactPort
from sink.contracts.planning import DayBucket

PARENT_SCHEMA_ID = "restproof.rest_source_parent.v1"


@dataclass(frozen=True, slots=True)
class DaySlice:
    day: date
    rows: int
    decoded_bytes: int
    row_start: int
    byte_start: int
    digest: str
    rows_sum: str = ""
    """Read from parents frozen before the expected summary moved to the sealer (64 hex digits of
    the day's ``mock-receiver.rows.v2`` sum); "" in every parent frozen since."""

    def bucket(self) -> DayBucket:
        return DayBucket(self.day, self.rows, self.decoded_bytes, self.row_start)


@dataclass(frozen=True, slots=True)
class FrozenParent:
    digest: str
    rows_ref: str
    row_count: int
    rows_bytes: int
    scope_from: date
    scope_to: date
    days: tuple[DaySlice, ...]
    fixed_overhead_bytes: int
    source_version: str

    def buckets(self) -> tuple[DayBucket, ...]:
        return tuple(day.bucket() for day in self.days)

    def day_range(self, scope_from: date, scope_to: date) -> tuple[DaySlice, ...]:
        return tuple(day for day in self.days if scope_from <= day.day < scope_to)


def parent_from_document(digest: str, document: dict[str, Any]) -> FrozenParent:
    scope = document["logical_scope"]
    return FrozenParent(
        digest=digest,
        rows_ref=str(document["rows_ref"]),
        row_count=int(document["row_count"]),
        rows_bytes=int(document["rows_bytes"]),
        scope_from=date.fromisoformat(scope["from"]),
        scope_to=date.fromisoformat(scope["to"]),
        days=tuple(DaySlice(date.fromisoformat(d["day"]), int(d["rows"]), int(d["decoded_bytes"]),
                            int(d["row_start"]), int(d["byte_start"]), str(d["digest"]), str(d.get("rows_sum", "")))
                    for d in document["days"]),
        fixed_overhead_bytes=int(document["fixed_overhead_bytes"]),
        source_version=str(document["source"]["version"]),
    )


def load_parent(store: ImmutableArtifactPort, digest: str) -> FrozenParent:
    return parent_from_document(digest, read_document(store, digest, PARENT_SCHEMA_ID))
