"""SourceSnapshotPort: one consistent read of a source for one scope.

A snapshot yields raw records (column -> value) of ONE consistent version of the source:
PostgreSQL one REPEATABLE READ READ ONLY transaction, SQLite one read transaction, files a
size + mtime + digest check before and after the read. ``finish()`` proves the read was
consistent and returns the source version; ``close()`` releases the snapshot and is called as
soon as the parent artifact is durable (seed: "close the source snapshot immediately after
materialization is durable"). A snapshot is never reopened: the parent artifact is the only
input to planning and sealing from then on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Protocol, runtime_checkable

MAX_NUMBER_CHARS = 100
"""A number written with more characters than this is never converted (Python refuses ints of
more than 4 300 digits with a ValueError, and a decimal of a million digits costs its size again
at every step): the reader hands an ``OversizedNumber`` on, and the normalizer refuses it as
``source.number_too_large`` with the field's name when the field is mapped."""


@dataclass(frozen=True, slots=True)
class OversizedNumber:
    """A raw number longer than ``MAX_NUMBER_CHARS`` characters; only its length is kept."""

    chars: int


@runtime_checkable
class SourceSnapshot(Protocol):
    @property
    def kind(self) -> str: ...

    def columns(self) -> list[str] | None:
        """The column names when the source declares them up front (CSV header, query), else None."""

    def records(self) -> Iterator[tuple[int, Mapping[str, object]]]:
        """(1-based record number, raw record); raises ``SourceError`` on invalid bytes."""

    def finish(self) -> str:
        """Verify the read was one consistent version; return that version's identity."""

    def close(self) -> None:
        """Release the snapshot. Idempotent."""


@runtime_checkable
class SourceSnapshotPort(Protocol):
    def open(self, scope_from: date, scope_to: date) -> SourceSnapshot: ...


@runtime_checkable
class TextRowSnapshot(Protocol):
    """A snapshot that can also hand its records over as positional text (a CSV file): the
    freeze's fast path reads these instead of one dict per record."""

    @property
    def empty_value(self) -> str | None:
        """What an empty field stands for in ``records()``."""

    def text_rows(self) -> Iterator[tuple[int, list[str]]]:
        """(1-based record number, fields in ``columns()`` order); the same records as ``records()``."""

    def text_batches(self) -> Iterator[tuple[int, list[list[str]]]]:
        """``text_rows`` a bounded batch at a time: (number of the batch's first record, records);
        an error is raised after the batch of the records before it."""
