"""CSV and NDJSON file snapshots: size + mtime + digest before the read, re-checked after it.

The digest is taken twice: once in a first pass before reading (the "before" version) and once
over exactly the bytes the parser consumed. Any difference, or a changed size or mtime, is
``source.changed_during_read``. Lines are read with a bound, so a 100 MB field fails as
``source.field_too_large`` after at most ``max_field_bytes`` characters, never by exhausting memory.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sink.contracts.source import CsvFileSource, NdjsonFileSource
from sink.source.errors import SourceError
from sink.source.ndjson import parse_line

_READ_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class FileVersion:
    size: int
    mtime_ns: int
    digest: str

    def text(self) -> str:
        return f"file:{self.digest}:size={self.size}"


class _HashingReader(io.RawIOBase):
    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.hasher = hashlib.sha256()
        self.offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(buffer))
        buffer[: len(data)] = data
        self.hasher.update(data)
        self.offset += len(data)
        return len(data)


def _csv_error(exc: csv.Error, line: int) -> SourceError:
    code = "source.field_too_large" if "field larger" in str(exc) else "source.malformed_record"
    return SourceError(code, "the CSV record can not be parsed", record=line)


def _stat(path: Path) -> os.stat_result:
    try:
        info = path.stat()
    except FileNotFoundError:
        raise SourceError("source.not_found", "the source file does not exist") from None
    except OSError as exc:
        raise SourceError("source.unavailable", f"the source file can not be read ({type(exc).__name__})") from None
    if not stat.S_ISREG(info.st_mode):
        raise SourceError("source.not_regular_file", "the source is not a regular file")
    return info


def _version(path: Path) -> FileVersion:
    info = _stat(path)
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_READ_BYTES):
            hasher.update(block)
    return FileVersion(info.st_size, info.st_mtime_ns, "sha256:" + hasher.hexdigest())


class _FileSnapshot:
    kind = "file"

    def __init__(self, path: Path, max_field_bytes: int) -> None:
        self._path = path
        self._limit = max_field_bytes
        self._before = _version(path)
        self._handle: IO[bytes] | None = path.open("rb")
        self._reader = _HashingReader(self._handle)

    def columns(self) -> list[str] | None:
        return None

    def finish(self) -> str:
        # Drain what the parser did not need (a trailing newline) so the digests compare equal.
        while self._reader.read(_READ_BYTES):
            pass
        info = _stat(self._path)
        after = FileVersion(info.st_size, info.st_mtime_ns, "sha256:" + self._reader.hasher.hexdigest())
        if after != self._before or _version(self._path) != self._before:
            raise SourceError("source.changed_during_read", "the source file changed while it was read")
        return self._before.text()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class CsvFileSnapshot(_FileSnapshot):
    kind = "csv_file"

    def __init__(self, path: Path, spec: CsvFileSource) -> None:
        super().__init__(path, spec.max_field_bytes)
        self._spec = spec
        self._text = io.TextIOWrapper(io.BufferedReader(self._reader), encoding="utf-8", errors="strict", newline="")
        self._line = 0
        csv.field_size_limit(self._limit)
        self._rows = csv.reader(self._lines(), delimiter=spec.delimiter, quotechar='"', doublequote=True, strict=True)
        self._header = self._next_row()
        if self._header is None:
            raise SourceError("source.malformed_record", "the CSV file has no header line", record=0)
        if self._header and self._header[0].startswith("\ufeff"):
            self._header[0] = self._header[0][1:]

    def _lines(self) -> Iterator[str]:
        while True:
            try:
                line = self._text.readline(self._limit + 1)
            except UnicodeDecodeError:
                raise SourceError("source.invalid_utf8", "the file is not valid UTF-8",
                                  byte_offset=self._reader.offset, record=self._line) from None
            if not line:
                return
            if len(line) > self._limit and not line.endswith("\n"):
                raise SourceError("source.field_too_large", "a line is longer than max_field_bytes",
                                  record=self._line + 1)
            yield line

    def _next_row(self) -> list[str] | None:
        try:
            return next(self._rows)
        except StopIteration:
            return None
        except csv.Error as exc:
            raise _csv_error(exc, self._rows.line_num) from None

    def columns(self) -> list[str] | None:
        return list(self._header or [])

    @property
    def empty_value(self) -> str | None:
        """What an empty field stands for in ``records`` (the source's ``empty_field``)."""
        return None if self._spec.empty_field == "null" else ""

    def text_rows(self) -> Iterator[tuple[int, list[str]]]:
        """(1-based record number, the record's fields as read, in header order)."""
        width = len(self._header or [])
        number = 0
        try:
            for row in self._rows:  # what _next_row does, without a call per row
                number += 1
                if len(row) != width:
                    raise SourceError("source.malformed_record", "a record has a different number of fields",
                                      record=number)
                yield number, row
        except csv.Error as exc:
            raise _csv_error(exc, self._rows.line_num) from None

    def records(self) -> Iterator[tuple[int, Mapping[str, object]]]:
        header = self._header or []
        empty = self.empty_value
        for number, row in self.text_rows():
            yield number, {name: (value if value != "" else empty) for name, value in zip(header, row, strict=True)}


class NdjsonFileSnapshot(_FileSnapshot):
    kind = "ndjson_file"

    def __init__(self, path: Path, spec: NdjsonFileSource) -> None:
        super().__init__(path, spec.max_field_bytes)
        self._buffered = io.BufferedReader(self._reader)

    def records(self) -> Iterator[tuple[int, Mapping[str, object]]]:
        number = 0
        while True:
            line = self._buffered.readline(self._limit + 1)
            if not line:
                return
            number += 1
            if len(line) > self._limit and not line.endswith(b"\n"):
                raise SourceError("source.field_too_large", "a line is longer than max_field_bytes", record=number)
            if not line.strip():
                continue
            yield number, parse_line(line, number)


class FileSourcePort:
    def __init__(self, spec: CsvFileSource | NdjsonFileSource, base_dir: Path) -> None:
        self._spec = spec
        path = Path(spec.path)
        self._path = path if path.is_absolute() else base_dir / path

    def open(self, scope_from: object, scope_to: object) -> CsvFileSnapshot | NdjsonFileSnapshot:
        if isinstance(self._spec, CsvFileSource):
            return CsvFileSnapshot(self._path, self._spec)
        return NdjsonFileSnapshot(self._path, self._spec)
