"""Freeze one source boundary into the immutable parent ``restproof.rest_source_parent.v1``.

One consistent snapshot is read once. Every record is checked against the closed mapping,
normalized and encoded in the profile's payload format; rows outside ``[scope_from, scope_to)``
are dropped (and counted). Rows are spilled per business date, then each day is sorted by its
encoded bytes — a canonical order that does not depend on the order the source happened to
return — and written back to back into one content-addressed rows artifact. The parent manifest
records sort and split keys, row count, logical scope, source version, the content digest and
the per-day histogram the planner needs (rows, decoded bytes in the payload format, first row,
byte offset and digest of each day's bytes, so a child's byte range is verified on read).

Order of durability (seed: "Frozen source boundary"): read and verify the snapshot, publish the
rows artifact, close the snapshot, publish the manifest. A day larger than the profile's hard
decoded limit can never be sent in one request and fails as REST_DELIVERY_SCOPE_EXCEEDS_LIMIT
before it is sorted, so memory stays bounded by one admissible day.
"""

from __future__ import annotations

import hashlib
import struct
import tempfile
from array import array
from collections.abc import Callable, Iterator, Mapping
from datetime import date, timedelta
from itertools import accumulate, groupby
from pathlib import Path
from typing import IO

from sink.artifacts.documents import put_document
from sink.artifacts.port import ImmutableArtifactPort
from sink.contracts.errors import DeliveryError, ErrorCode
from sink.payload.encoding import EncodeError, Row, RowEncoder
from sink.payload.parent import PARENT_SCHEMA_ID, DaySlice, FrozenParent, load_parent, parent_from_document
from sink.source.errors import SourceError
from sink.source.normalize import RowNormalizer
from sink.source.port import SourceSnapshot, SourceSnapshotPort, TextRowSnapshot
from sink.source.transcode import Fallback, TextRowTranscoder

FREEZE_VERSION = "restproof.freeze.v1"
MAX_SCOPE_DAYS = 1000
_CHUNK = 1 << 20
_LENGTH = struct.Struct(">I")
_SPILL_BATCH = 4 << 20
# The spill's row lengths: 4-byte unsigned ints in the machine's order (the file never leaves
# the process that wrote it).
_LENGTHS = next(code for code in "IL" if array(code).itemsize == 4)

Failpoint = Callable[[str], None]


def _no_failpoint(name: str) -> None:
    return None


class _Spill:
    """Per-day spill files of encoded rows, written in batches of ``_SPILL_BATCH`` bytes: one write
    per day per batch of a block (row count, the rows' lengths, the rows back to back), so a
    batch costs a few C-level calls, not two writes or a length prefix per row."""

    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._handles: dict[date, IO[bytes]] = {}
        self._pending: dict[date, list[bytes]] = {}
        self._held = 0
        self.rows: dict[date, int] = {}
        self.bytes: dict[date, int] = {}

    def add(self, day: date, encoded: bytes) -> int:
        """Spill one row (the reference path's); the day's bytes so far."""
        pending = self._pending.get(day)
        if pending is None:
            pending = self._pending[day] = []
            self.bytes.setdefault(day, 0)
        pending.append(encoded)
        size = self.bytes[day] = self.bytes[day] + len(encoded)
        self._held += len(encoded)
        if self._held >= _SPILL_BATCH:
            self._flush()
        return size

    def extend(self, day: date, encoded: list[bytes]) -> int:
        """Spill rows of one day; the day's bytes so far."""
        pending = self._pending.get(day)
        if pending is None:
            pending = self._pending[day] = []
            self.bytes.setdefault(day, 0)
        pending += encoded
        added = sum(map(len, encoded))
        size = self.bytes[day] = self.bytes[day] + added
        self._held += added
        if self._held >= _SPILL_BATCH:
            self._flush()
        return size

    def _flush(self) -> None:
        for day, rows in self._pending.items():
            handle = self._handles.get(day)
            if handle is None:
                handle = self._handles[day] = (self._dir / f"{day.isoformat()}.spill").open("wb")
            handle.write(_LENGTH.pack(len(rows)) + array(_LENGTHS, map(len, rows)).tobytes())
            handle.write(b"".join(rows))
            self.rows[day] = self.rows.get(day, 0) + len(rows)
        self._pending.clear()
        self._held = 0

    def finish(self) -> None:
        self._flush()
        self.close()

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()

    def sorted_rows(self, day: date) -> list[bytes]:
        if day not in self._handles:
            return []
        # Read a block at a time and cut it into rows, not the whole file and then a copy of every
        # row: the day is held once (its rows) plus one block, which is the freeze's peak memory
        # (issue: RSS <= 150 MB).
        rows: list[bytes] = []
        with (self._dir / f"{day.isoformat()}.spill").open("rb") as handle:
            read = handle.read
            while head := read(4):
                lengths = array(_LENGTHS)
                count = _LENGTH.unpack(head)[0] if len(head) == 4 else -1
                table = read(count * lengths.itemsize) if count >= 0 else b""
                if count < 0 or len(table) != count * lengths.itemsize:
                    raise OSError(f"the spill file of {day.isoformat()} is truncated")
                lengths.frombytes(table)
                ends = list(accumulate(lengths))
                block = read(ends[-1]) if ends else b""
                if len(block) != (ends[-1] if ends else 0):
                    raise OSError(f"the spill file of {day.isoformat()} is truncated")
                rows += map(block.__getitem__, map(slice, [0, *ends[:-1]], ends))
        if len(rows) != self.rows.get(day, 0):
            raise OSError(f"the spill file of {day.isoformat()} is truncated (rows missing)")
        rows.sort()
        return rows


def _days(scope_from: date, scope_to: date) -> list[date]:
    count = (scope_to - scope_from).days
    if count <= 0 or count > MAX_SCOPE_DAYS:
        raise SourceError("preparation.unsupported_scope", f"a scope is 1..{MAX_SCOPE_DAYS} days")
    return [scope_from + timedelta(days=offset) for offset in range(count)]


def freeze(
    *,
    snapshot_port: SourceSnapshotPort,
    normalizer: RowNormalizer,
    encoder: RowEncoder,
    scope_from: date,
    scope_to: date,
    store: ImmutableArtifactPort,
    max_day_bytes: int,
    compiled_plan_digest: str,
    spill_dir: Path | None = None,
    failpoint: Failpoint = _no_failpoint,
) -> FrozenParent:
    days = _days(scope_from, scope_to)
    with tempfile.TemporaryDirectory(prefix="restproof-freeze-", dir=spill_dir) as scratch:
        spill = _Spill(Path(scratch))
        snapshot = snapshot_port.open(scope_from, scope_to)
        try:
            outside = _read(snapshot, normalizer, encoder, spill, scope_from=scope_from, scope_to=scope_to,
                            max_day_bytes=max_day_bytes)
            spill.finish()
            source_version = snapshot.finish()
            failpoint("freeze.source_read")
            slices: list[DaySlice] = []
            rows_ref = store.put(_rows_stream(spill, days, slices))
            failpoint("freeze.rows_durable")
        finally:
            spill.close()
            snapshot.close()
    overhead = len(encoder.prefix()) + len(encoder.suffix())
    document = {
        "schema_id": PARENT_SCHEMA_ID,
        "producer_version": FREEZE_VERSION,
        "refs": [rows_ref.digest],
        "compiled_plan_digest": compiled_plan_digest,
        "source": {"kind": snapshot.kind, "version": source_version},
        "logical_scope": {"bounds": "[)", "from": scope_from.isoformat(), "to": scope_to.isoformat()},
        "sort_keys": [normalizer.mapping.scope_field, "encoded_row_bytes"],
        "split_keys": [normalizer.mapping.scope_field],
        "mapping_id": normalizer.mapping.id,
        "payload_encoding": encoder.encoding.canonical(),
        "row_count": sum(day.rows for day in slices),
        "rows_outside_scope": outside,
        "rows_ref": rows_ref.digest,
        "rows_bytes": rows_ref.length,
        "content_digest": rows_ref.digest,
        "fixed_overhead_bytes": overhead,
        "days": [{"day": d.day.isoformat(), "rows": d.rows, "decoded_bytes": d.decoded_bytes,
                  "row_start": d.row_start, "byte_start": d.byte_start, "digest": d.digest} for d in slices],
        "complete": True,
    }
    manifest = put_document(store, document)
    failpoint("freeze.parent_durable")
    return parent_from_document(manifest.digest, document)


def _read(snapshot: SourceSnapshot, normalizer: RowNormalizer, encoder: RowEncoder, spill: _Spill, *,
          scope_from: date, scope_to: date, max_day_bytes: int) -> int:
    columns = snapshot.columns()
    if columns is not None:
        normalizer.check_columns(columns)
    if columns is not None and isinstance(snapshot, TextRowSnapshot):
        return _read_text(snapshot, columns, normalizer, encoder, spill, scope_from=scope_from, scope_to=scope_to,
                          max_day_bytes=max_day_bytes)
    outside = 0
    for number, record in snapshot.records():
        if columns is None:
            normalizer.check_columns(sorted(record), record=number)
        day, encoded = _reference_row(normalizer, encoder, record, number, scope_from=scope_from,
                                          scope_to=scope_to)
        if encoded is None:
            outside += 1
        elif spill.add(day, encoded) > max_day_bytes:
            raise _day_too_large(day)
    return outside


def _read_text(snapshot: TextRowSnapshot, header: list[str], normalizer: RowNormalizer, encoder: RowEncoder,
               spill: _Spill, *, scope_from: date, scope_to: date, max_day_bytes: int) -> int:
    """The fast path (sink.source.transcode), a batch of records at a time; a batch it can not
    vouch for is taken row by row, and a row it can not vouch for takes the reference path."""
    transcoder = TextRowTranscoder(normalizer, encoder, header, snapshot.empty_value)
    empty = snapshot.empty_value

    def one_by_one(rows: list[list[str]], first: int) -> int:
        """Each row through the fast path's memos, or the reference path (which raises the
        reference's error, in record order); the rows outside the scope."""
        outside = 0
        for number, fields in enumerate(rows, first):
            try:
                day, encoded = transcoder.encode(fields)
            except Fallback:
                record = {name: (value if value != "" else empty) for name, value in zip(header, fields, strict=True)}
                day, reference = _reference_row(normalizer, encoder, record, number, scope_from=scope_from,
                                                scope_to=scope_to)
                if reference is None:
                    outside += 1
                    continue
                encoded = reference
            if not scope_from <= day < scope_to:
                outside += 1
            elif spill.add(day, encoded) > max_day_bytes:
                raise _day_too_large(day)
        return outside

    outside = 0
    for first, rows in snapshot.text_batches():
        try:
            days, encoded = transcoder.encode_batch(rows)
        except Fallback:
            outside += one_by_one(rows, first)
            continue
        at = 0
        for day, run in groupby(days):  # one spill call per run of rows of the same business date
            count = len(list(run))
            if not scope_from <= day < scope_to:
                outside += count
            elif spill.extend(day, encoded[at:at + count]) > max_day_bytes:
                raise _day_too_large(day)
            at += count
    return outside


def _reference_row(normalizer: RowNormalizer, encoder: RowEncoder, record: Mapping[str, object], number: int, *,
                   scope_from: date, scope_to: date) -> tuple[date, bytes | None]:
    """(business date, encoded row), or (business date, None) for a row outside the scope."""
    row = normalizer.normalize(record, number)
    day = date.fromisoformat(str(row[normalizer.scope_index]))
    if not scope_from <= day < scope_to:
        return day, None
    try:
        return day, encoder.encode(row)
    except EncodeError as exc:
        raise SourceError(exc.code, "the value can not be written in the profile's format",
                          field=exc.field, record=number) from None
    except UnicodeEncodeError:
        # A lone surrogate no reader caught (a database JSON column): UTF-8 can not carry it.
        raise SourceError("source.invalid_unicode", "a string holds an unpaired surrogate",
                          field=_unencodable_field(normalizer, row), record=number) from None


def _day_too_large(day: date) -> DeliveryError:
    return DeliveryError(
        ErrorCode.SCOPE_EXCEEDS_LIMIT,
        f"business date {day.isoformat()} exceeds max_decoded_bytes in one request; "
        "a receiver-atomic day is never divided",
    )


def _unencodable_field(normalizer: RowNormalizer, row: Row) -> str:
    for field, value in zip(normalizer.mapping.fields, row, strict=True):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return field.name
    return ""


def _rows_stream(spill: _Spill, days: list[date], slices: list[DaySlice]) -> Iterator[bytes]:
    row_start = 0
    byte_start = 0
    for day in days:
        hasher = hashlib.sha256()
        rows = spill.sorted_rows(day)
        count, size = len(rows), 0
        # Joined a slice at a time, not row by row; a slice holds at most _CHUNK bytes (or one
        # row), however large the rows: the day is held once, plus one chunk.
        step = max(1, _CHUNK // max(map(len, rows), default=1))
        for at in range(0, count, step):
            part = b"".join(rows[at:at + step])
            hasher.update(part)
            size += len(part)
            yield part
        del rows  # before the next day is read: one day held at a time
        slices.append(DaySlice(day, count, size, row_start, byte_start, "sha256:" + hasher.hexdigest()))
        row_start += count
        byte_start += size


# The parent's reading lives with the sealer (sink.payload.parent); these names stay importable here.
__all__ = ["FREEZE_VERSION", "PARENT_SCHEMA_ID", "DaySlice", "FrozenParent", "freeze", "load_parent",
           "parent_from_document"]
