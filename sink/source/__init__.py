"""Sources: snapshot adapters (files, SQLite, PostgreSQL, synthetic) and the parent freeze."""

from __future__ import annotations

from pathlib import Path

from sink.contracts.source import (
    CsvFileSource,
    NdjsonFileSource,
    PostgresqlQuerySource,
    SourceSpec,
    SqliteQuerySource,
    SyntheticSource,
)
from sink.source.errors import SOURCE_ERROR_CODES, SourceError
from sink.source.port import SourceSnapshot, SourceSnapshotPort


def source_port(spec: SourceSpec, base_dir: Path) -> SourceSnapshotPort:
    """The adapter for a workload's source; file paths resolve against ``base_dir``."""
    # Imported lazily: a CSV workload must not need the PostgreSQL driver.
    if isinstance(spec, CsvFileSource | NdjsonFileSource):
        from sink.source.files import FileSourcePort  # noqa: PLC0415

        return FileSourcePort(spec, base_dir)
    if isinstance(spec, SqliteQuerySource):
        from sink.source.databases import SqliteSourcePort  # noqa: PLC0415

        return SqliteSourcePort(spec, base_dir)
    if isinstance(spec, PostgresqlQuerySource):
        from sink.source.databases import PostgresqlSourcePort  # noqa: PLC0415

        return PostgresqlSourcePort(spec)
    assert isinstance(spec, SyntheticSource)
    from sink.source.synthetic import SyntheticSourcePort  # noqa: PLC0415

    return SyntheticSourcePort(spec)


__all__ = ["SOURCE_ERROR_CODES", "SourceError", "SourceSnapshot", "SourceSnapshotPort", "source_port"]
