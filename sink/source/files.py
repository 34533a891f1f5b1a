"""CSV and NDJSON file snapshots: size + mtime + digest before the read, re-checked after it.

The digest is taken twice: once in a first pass before reading (the "before" version) and once
over exactly the bytes the parser consumed. Any difference, or a changed size or mtime, is
``source.changed_during_read``. Lines are read with a bound, so a 100 MB field fails as
``source.field_too_large`` after at most ``max_field_bytes`` characters, never by exhausting memory.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import IO, Any

from sink.contracts.source import CsvFileSource, NdjsonFileSource
from sink.source.errors import SourceError
from sink.source.ndjson import parse_line

_READ_BYTES = 1 << 20
_CHUNK_BYTES = 8192  # TextIOWrapper's chunk
# Lines as readline(newline="") ends them: at CR, LF or CRLF only (str.splitlines also breaks at
# VT, FF, FS, GS, RS, NEL, LS and PS; a chunk holding one is split by this instead).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_BATCH_ROWS = 2048
_BATCH_BYTES = 1 << 20


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


_LINE_END = re.compile(r"\r\n|\r|\n")
"""A line's end in a CSV file: CR, LF or CRLF (``newline=""``), the only ends ``csv`` knows."""


def _breaks(text: str) -> int:
    """How many lines ``str.splitlines`` cuts ``text`` (not empty) into if it breaks at LF and
    CRLF only: one per LF, and a rest after the last one. A chunk with a lone CR (a line end
    too) or another break ``str.splitlines`` knows (VT, FF, NEL, LS, ...) gives more lines."""
    return text.count("\n") + (text[-1] != "\n")


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
        self._line = 0
        csv.field_size_limit(self._limit)
        self._rows = csv.reader(chain.from_iterable(self._line_blocks()), delimiter=spec.delimiter, quotechar='"',
                                doublequote=True, strict=True)
        self._header = self._next_row()
        if self._header is None:
            raise SourceError("source.malformed_record", "the CSV file has no header line", record=0)
        if self._header and self._header[0].startswith("\ufeff"):
            self._header[0] = self._header[0][1:]

    def _line_blocks(self) -> Iterator[list[str]]:
        """The file's lines exactly as ``readline(max_field_bytes + 1)`` of a UTF-8
        ``TextIOWrapper(newline="")`` returns them (lines end at CR, LF or CRLF only), a decoded
        chunk of 8 KiB at a time: the csv reader takes them from a list, not one Python call per
        line. The chunks are the ones TextIOWrapper reads (the same byte offset in evidence); at
        most one unfinished line (within the bound) is held between chunks."""
        decode = codecs.getincrementaldecoder("utf-8")("strict").decode
        read, limit = self._reader.read, self._limit
        carry = ""
        while True:
            data = read(_CHUNK_BYTES)
            try:
                text = carry + decode(data, not data)
            except UnicodeDecodeError as exc:
                # The physical line that holds the first bad byte: lines read whole, then the line
                # ends before it in this chunk (``exc.object`` is what the decoder was given: a
                # character it held from the last chunk, then this one). byte_offset: where the
                # chunk read ends.
                before = carry + bytes(exc.object[:exc.start]).decode("utf-8")
                raise SourceError("source.invalid_utf8", "the file is not valid UTF-8",
                                  byte_offset=self._reader.offset,
                                  record=self._line + len(_LINE_END.findall(before)) + 1) from None
            if not text:
                if not data:
                    return
                continue  # a chunk that ends inside a character: the decoder holds it
            lines = text.splitlines(keepends=True)
            if len(lines) != _breaks(text):  # a lone CR, or splitlines also broke at a VT, FF, NEL, LS, ...
                lines = _LINE.findall(text)
            # Unfinished: no LF yet, or a CR that an LF may follow in the next chunk.
            carry = lines.pop() if data and not lines[-1].endswith("\n") else ""
            if max(map(len, lines), default=0) > limit or len(carry) > limit:
                # readline(limit + 1) would return limit + 1 characters that do not end the line.
                long = next((at for at, line in enumerate(lines) if len(line) > limit
                             and not (len(line) == limit + 1 and line.endswith("\n"))), None)
                if long is not None or len(carry) > limit:
                    whole = lines[:long]
                    yield whole
                    self._line += len(whole)
                    raise SourceError("source.field_too_large", "a line is longer than max_field_bytes",
                                      record=self._line + 1)
            yield lines
            self._line += len(lines)  # physical lines, as the csv module's line_num counts them
            if not data:
                return

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

    def text_batches(self) -> Iterator[tuple[int, list[list[str]]]]:
        """(1-based number of the first record, the next records as ``text_rows`` gives them).

        A batch holds at most ``_BATCH_ROWS`` records and about ``_BATCH_BYTES`` of the file, so
        the rows held stay bounded whatever the lines' length. A record that can not be read
        (a malformed record, a wrong field count, invalid UTF-8, a line too long) ends the batch:
        the records before it are handed over first, then its error is raised, as ``text_rows``
        would."""
        width = len(self._header or [])
        rows, hashing = self._rows, self._reader
        number = 0
        while True:
            batch: list[list[str]] = []
            append, stop = batch.append, hashing.offset + _BATCH_BYTES
            failure: SourceError | None = None
            try:
                for row in islice(rows, _BATCH_ROWS):
                    append(row)
                    if hashing.offset >= stop:
                        break
            except csv.Error as exc:
                failure = _csv_error(exc, rows.line_num)
            except SourceError as exc:  # from the line reader
                failure = exc
            if batch and {width} != set(map(len, batch)):  # the first record of another width fails first
                wrong = next(at for at, row in enumerate(batch) if len(row) != width)
                batch, failure = batch[:wrong], SourceError(
                    "source.malformed_record", "a record has a different number of fields", record=number + wrong + 1)
            if batch:
                yield number + 1, batch
                number += len(batch)
            if failure is not None:
                raise failure
            if not batch:
                return

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
