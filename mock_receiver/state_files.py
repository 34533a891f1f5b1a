"""Files ``serve`` creates in its state directory, never through a link someone planted there.

A state directory may be shared or prepared by someone else, so every file the receiver creates in it
is checked without following links: ``endpoints.json`` is written to a fresh temporary file (opened
``O_CREAT | O_EXCL | O_NOFOLLOW``) and renamed over the name (a rename replaces a link, it never
writes through it); the ledger and its side files (``-wal``, ``-shm``, ``-journal``) must each be
absent or a regular file, the ledger is opened ``O_NOFOLLOW`` (created so when absent) and noted
before SQLite opens it, and after SQLite opened it the name must still be that same file. Anything else is a
:class:`StateFileRefused` (exit 2), with nothing written.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class StateFileRefused(Exception):
    """A file of the state directory is a link or not a regular file (the message names it)."""


def _refuse_unless_regular(path: Path) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise StateFileRefused(f"{path} is a symbolic link; the receiver never writes through one")
    if not stat.S_ISREG(mode):
        raise StateFileRefused(f"{path} exists and is not a regular file")


def check_files(paths: list[Path]) -> None:
    """Each path is absent or a regular file (never followed)."""
    for path in paths:
        _refuse_unless_regular(path)


def ledger_files(ledger: Path) -> list[Path]:
    return [ledger, *(ledger.with_name(ledger.name + suffix) for suffix in SIDE_SUFFIXES)]


@contextmanager
def pinned_ledger(ledger: Path) -> Iterator[None]:
    """Open (or create, mode 0600) the ledger without following links and note which file it is, while
    SQLite opens it by name; afterwards the name must still be that file and no side file a link.

    The descriptor is closed BEFORE SQLite opens the file: closing any descriptor of a file drops every
    POSIX lock the process holds on it, SQLite's included, and a ledger whose shared lock silently went
    away can have its WAL checkpointed and deleted under it by another process's connection."""
    check_files(ledger_files(ledger))
    try:
        descriptor = os.open(ledger, os.O_RDONLY | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
    except OSError as error:
        raise StateFileRefused(f"{ledger} cannot be opened without following links: "
                               f"{error.strerror or error.__class__.__name__}") from None
    try:
        pinned = os.fstat(descriptor)
    finally:
        os.close(descriptor)
    if not stat.S_ISREG(pinned.st_mode):
        raise StateFileRefused(f"{ledger} is not a regular file")
    yield
    check_files(ledger_files(ledger))
    now = os.lstat(ledger)
    if (now.st_dev, now.st_ino) != (pinned.st_dev, pinned.st_ino):
        raise StateFileRefused(f"{ledger} was replaced while it was being opened")


def write_new_file(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with a file holding ``data``: written to a temporary file created exclusively
    (never an existing file or a link) beside it, then renamed over ``path`` (atomic; a link at
    ``path`` is replaced, not followed)."""
    _refuse_unless_regular(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)  # a leftover of an earlier process with the same pid (never followed)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
