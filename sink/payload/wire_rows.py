"""Rows of a sealed body as the receiver reads them, for the expected summary digest.

Written from the receiver's published reading of a body (docs/mock-receiver.md, "Request
bodies"), never from its code: JSON and NDJSON rows keep their JSON types (a JSON number may be a
float); CSV is comma-separated with RFC 4180 quoting, its first record is the header, empty records
are skipped and every value is text. The input is the frozen parent's stored rows (each ends at a
newline; a quoted CSV value may hold more), so the rows of any byte range of a child are read
without decompressing or holding its payload.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from itertools import chain

from sink.payload.summary_digest import WireValue

WireRow = dict[str, WireValue]


def csv_header_known(fmt: str, prefix: bytes) -> bool:
    """Whether the body's header is in its prefix (it is not for a header-less CSV dialect: the
    receiver then takes a child's first row for its header, so per-day rows have no meaning)."""
    return fmt != "csv" or bool(prefix.decode("utf-8").removeprefix("\ufeff"))


def receiver_rows(fmt: str, prefix: bytes, lines: Iterable[str]) -> Iterator[WireRow]:
    """``lines``: the stored rows' text, each piece ending at a newline (or a whole stored row)."""
    if fmt != "csv":
        for line in lines:
            if line.strip():
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError("a stored JSON row is not an object")
                yield row
        return
    head = prefix.decode("utf-8").removeprefix("\ufeff")
    reader = csv.reader(chain([head] if head else [], lines), strict=True)
    header = next(reader, None)
    if header is None:
        return
    for record in reader:
        if record:
            yield dict(zip(header, record, strict=True))


def text_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Stored row bytes in any chunking -> text pieces that each end at a newline."""
    held = b""
    for chunk in chunks:
        held += chunk
        cut = held.rfind(b"\n") + 1
        if cut:
            # At "\n" only: str.splitlines would also split at U+2028 and others, which JSON
            # text may hold raw inside a string.
            for line in held[:cut - 1].decode("utf-8").split("\n"):
                yield line + "\n"
            held = held[cut:]
    if held:
        yield held.decode("utf-8")
