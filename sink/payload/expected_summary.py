"""A child's expected receiver summary, in the scheme its profile's verification contract names.

A profile may certify a read-only summary query (``verification.summary``) whose content digest
follows a documented scheme (sink/payload/summary_digest.py). The sealer, which knows the
profile, computes what that digest must be for every child it seals and records it in the
payload manifest, so verifying a child never decodes its payload again. Only
``mock-receiver.rows.v2`` is precomputed: its per-day sums add up, so each business date of the
frozen parent is read and summed once however often refinement re-seals windows over it
(``mock-receiver.rows.v1`` sorts every row of the child and is left to the verifier).

A day is read back from the parent's rows artifact and verified against the day's digest, like
every other read of the parent. A header-less CSV dialect has no per-day reading (the receiver
takes a body's first row for its header), so it has no precomputed summary either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from datetime import date

from sink.artifacts.port import ArtifactCorrupt, ImmutableArtifactPort
from sink.contracts.profile_verification import MOCK_RECEIVER_ROWS_V2
from sink.payload.encoding import RowEncoder
from sink.payload.parent import DaySlice, FrozenParent
from sink.payload.summary_digest import RowsSum, rows_sum
from sink.payload.wire_rows import csv_header_known, receiver_rows, text_lines


class ExpectedSummaries:
    def __init__(self, store: ImmutableArtifactPort, parent: FrozenParent, encoder: RowEncoder,
                 scheme: str | None) -> None:
        self._store = store
        self._parent = parent
        self._format = encoder.encoding.format
        self._prefix = encoder.prefix()
        self.scheme = scheme if scheme == MOCK_RECEIVER_ROWS_V2 and csv_header_known(self._format,
                                                                                   self._prefix) else None
        self._days: dict[date, RowsSum] = {}

    def digest(self, days: Sequence[DaySlice]) -> str | None:
        """The expected digest of a child made of ``days``; None where the scheme is not precomputed."""
        if self.scheme is None:
            return None
        total = RowsSum()
        for day in days:
            if day.day not in self._days:
                self._days[day.day] = rows_sum(receiver_rows(self._format, self._prefix,
                                                             text_lines(self._verified(day))))
            total += self._days[day.day]
        return total.digest()

    def _verified(self, day: DaySlice) -> Iterator[bytes]:
        hasher = hashlib.sha256()
        for chunk in self._store.read_range(self._parent.rows_ref, day.byte_start, day.byte_start + day.decoded_bytes):
            hasher.update(chunk)
            yield chunk
        if "sha256:" + hasher.hexdigest() != day.digest:
            raise ArtifactCorrupt(f"day {day.day.isoformat()} of parent {self._parent.digest} is corrupt")
