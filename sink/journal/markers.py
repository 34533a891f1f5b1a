"""MAY_ATTEMPT markers: immutable, create-if-absent, independent of the journal.

Seed ("Zero-RPO mutation admission"): before each submit a marker keyed by (operation_namespace,
operation_id, attempt_ordinal) is published; it binds operation/parent/child identity,
generation, expected journal revision, journal epoch, mutation-intent digest and creation time.
A marker without its exactly matching journal attempt is possible remote effect, never permission.

The default store is a directory on its own (ideally on another failure domain than the
journal). Files are written to a private temporary name, fsynced, then hard-linked to the final
name: ``link`` fails with EEXIST when the marker exists, so publication is atomic and a reader
never sees a half-written marker; the parent directories are fsynced after the link.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Protocol, runtime_checkable

from sink.journal.ids import attempt_id_for, require_digest, require_ident
from sink.journal.port import JournalRejection, RejectionReason
from sink.journal.records import (
    GenerationKey,
)

MARKER_FORMAT = "restproof.may-attempt.v1"
GRANT_CLAIM_FORMAT = "restproof.may-attempt-grant-claim.v1"
NOT_SENT_FORMAT = "restproof.may-attempt-not-sent.v1"
_ORDINAL_FILE = re.compile(r"^(\d{10})\.json\Z")


def _digest_of(raw: bytes) -> str:
    """A marker file's digest: of its exact bytes, as stored."""
    return "sha256:" + hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True, slots=True)
class MayAttemptMarker:
    operation_namespace: str
    operation_id: str
    parent_id: str
    delivery_key: str
    attempt_ordinal: int
    generation: GenerationKey
    expected_revision: int
    journal_epoch: int
    mutation_intent_digest: str
    created_at_utc: str

    def __post_init__(self) -> None:
        for name in ("operation_namespace", "operation_id", "parent_id", "delivery_key"):
            require_ident(getattr(self, name), name)
        require_digest(self.mutation_intent_digest, "mutation_intent_digest")
        if self.attempt_ordinal < 1:
            raise ValueError("attempt_ordinal starts at 1")
        if self.expected_revision < 0 or self.journal_epoch < 0:
            raise ValueError("expected_revision and journal_epoch must be >= 0")

    @property
    def attempt_id(self) -> str:
        return attempt_id_for(self.operation_id, self.attempt_ordinal)

    def canonical_bytes(self) -> bytes:
        body = {"format": MARKER_FORMAT, "attempt_id": self.attempt_id, **asdict(self)}
        return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()

    def digest(self) -> str:
        return _digest_of(self.canonical_bytes())

    def same_binding(self, other: MayAttemptMarker) -> bool:
        """Equal in everything but creation time (a re-publish after a crash is the same marker)."""
        return replace(self, created_at_utc="") == replace(other, created_at_utc="")


@dataclass(frozen=True, slots=True)
class GrantClaim:
    """The identity of the one critical submit that used a marker: written once, before COMMIT."""

    operation_namespace: str
    operation_id: str
    attempt_ordinal: int
    attempt_id: str
    marker_digest: str
    expected_revision: int
    journal_epoch: int
    lease_owner: str
    claimed_at_utc: str
    grant_nonce: str
    """Random per submit call: no two calls ever write equal claims."""

    def canonical_bytes(self) -> bytes:
        body = {"format": GRANT_CLAIM_FORMAT, **asdict(self)}
        return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


@dataclass(frozen=True, slots=True)
class StoredMarker:
    marker: MayAttemptMarker
    digest: str
    created: bool
    """True when this call published it."""


@dataclass(frozen=True, slots=True)
class UnreadableMarker:
    """A marker file that exists but cannot be parsed: still treated as possible remote effect."""

    operation_namespace_key: str
    operation_id: str
    attempt_ordinal: int
    digest: str


class MarkerConflict(JournalRejection):
    def __init__(self, detail: str) -> None:
        super().__init__(RejectionReason.MARKER_MISMATCH, detail)


@runtime_checkable
class MarkerStore(Protocol):
    def create_if_absent(self, marker: MayAttemptMarker) -> StoredMarker:
        """Publish once; an existing marker with the same binding is returned (created=False);
        a different binding raises MarkerConflict."""

    def get(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> StoredMarker | None:
        ...

    def scan(self) -> Iterator[StoredMarker | UnreadableMarker]:
        """Every marker in the store, readable or not."""

    def claim_grant(self, claim: GrantClaim) -> bool:
        """Publish the grant claim of a marker once; True only when THIS call created it."""

    def grant_claimed(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> bool:
        """Whether a grant claim exists for this marker key (readable or not)."""

    def attest_not_sent(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> bool:
        """Record, once, that the worker holding this attempt's grant claim never sent its request
        (its critical commit was unconfirmed, and it stopped without sending). Bound to the claim's
        digest; False when no grant claim exists (then no attempt was granted at all)."""

    def not_sent_attested(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> bool:
        """Whether a not-sent attestation exists for this attempt and names its current grant claim."""


@functools.lru_cache(maxsize=64)
def namespace_key(operation_namespace: str) -> str:
    # Namespaces may contain ':' or '/'; the directory name is a digest of it. Cached: a process
    # delivers a few namespaces and builds a marker path several times per attempt.
    return hashlib.sha256(operation_namespace.encode()).hexdigest()[:32]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_no_follow(path: Path) -> bytes:
    """Read a file this store created; a symlink planted in its place is refused (ELOOP), never followed."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def _decode(raw: bytes) -> MayAttemptMarker:
    body = json.loads(raw)
    if body.pop("format") != MARKER_FORMAT:
        raise ValueError("unknown marker format")
    body.pop("attempt_id")
    generation = GenerationKey(**body.pop("generation"))
    return MayAttemptMarker(generation=generation, **body)


class FileMarkerStore:
    """Create-if-absent marker files under ``root/<namespace digest>/<operation id>/<ordinal>.json``."""

    def __init__(self, root: Path, *, create: bool = True) -> None:
        """``create=False`` (read-only commands) creates nothing; a missing store holds no marker."""
        self._root = Path(root)
        if create:
            self._root.mkdir(parents=True, exist_ok=True)

    @property
    def root(self) -> Path:
        return self._root

    def _path(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> Path:
        require_ident(operation_id, "operation_id")
        if "/" in operation_id or operation_id.startswith("."):
            raise ValueError("operation_id must not contain '/' or start with '.'")
        return self._root.joinpath(namespace_key(operation_namespace), operation_id, f"{attempt_ordinal:010d}.json")

    def create_if_absent(self, marker: MayAttemptMarker) -> StoredMarker:
        final = self._path(marker.operation_namespace, marker.operation_id, marker.attempt_ordinal)
        existing = self.get(marker.operation_namespace, marker.operation_id, marker.attempt_ordinal)
        if existing is not None:
            return self._resolve_existing(existing, marker)
        raw = marker.canonical_bytes()
        if not self._publish_once(final, raw):
            raced = self.get(marker.operation_namespace, marker.operation_id, marker.attempt_ordinal)
            if raced is None:  # pragma: no cover - link said it exists, so it does
                raise FileExistsError(final)
            return self._resolve_existing(raced, marker)
        # The digest of the very bytes published (``marker.digest()`` would encode them again).
        return StoredMarker(marker, _digest_of(raw), created=True)

    def _publish_once(self, final: Path, raw: bytes) -> bool:
        """Write ``raw`` to ``final`` atomically and durably unless it exists; True if we created it."""
        # Directories this call creates must be fsynced in their parents too; an existing one (the
        # marker's, for its grant claim or a later ordinal) was made durable when it was created.
        new_dirs = not final.parent.exists()
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f".{final.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o444)
        try:
            os.write(fd, raw)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, final)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise
            return False
        finally:
            tmp.unlink(missing_ok=True)
        _fsync_dir(final.parent)
        if new_dirs:
            _fsync_dir(final.parent.parent)
            _fsync_dir(self._root)
        return True

    def _claim_path(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> Path:
        return self._path(operation_namespace, operation_id, attempt_ordinal).with_suffix(".grant.json")

    def claim_grant(self, claim: GrantClaim) -> bool:
        path = self._claim_path(claim.operation_namespace, claim.operation_id, claim.attempt_ordinal)
        return self._publish_once(path, claim.canonical_bytes())

    def grant_claimed(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> bool:
        return self._claim_path(operation_namespace, operation_id, attempt_ordinal).exists()

    def _claim_digest(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> str | None:
        try:
            raw = _read_no_follow(self._claim_path(operation_namespace, operation_id, attempt_ordinal))
        except FileNotFoundError:
            return None
        return _digest_of(raw)

    def _attestation_path(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> Path:
        return self._path(operation_namespace, operation_id, attempt_ordinal).with_suffix(".not-sent.json")

    def attest_not_sent(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> bool:
        claim = self._claim_digest(operation_namespace, operation_id, attempt_ordinal)
        if claim is None:
            return False
        body = {"format": NOT_SENT_FORMAT, "operation_id": operation_id, "attempt_ordinal": attempt_ordinal,
                "grant_claim_digest": claim}
        raw = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        self._publish_once(self._attestation_path(operation_namespace, operation_id, attempt_ordinal), raw)
        return True

    def not_sent_attested(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> bool:
        claim = self._claim_digest(operation_namespace, operation_id, attempt_ordinal)
        try:
            body = json.loads(_read_no_follow(self._attestation_path(operation_namespace, operation_id,
                                                                     attempt_ordinal)))
        except (FileNotFoundError, ValueError):
            return False
        return (claim is not None and isinstance(body, dict) and body.get("format") == NOT_SENT_FORMAT
                and body.get("grant_claim_digest") == claim and body.get("attempt_ordinal") == attempt_ordinal)

    @staticmethod
    def _resolve_existing(existing: StoredMarker, wanted: MayAttemptMarker) -> StoredMarker:
        if not existing.marker.same_binding(wanted):
            raise MarkerConflict(
                f"marker for {wanted.operation_id} attempt {wanted.attempt_ordinal} exists with another binding"
            )
        return replace(existing, created=False)

    def get(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> StoredMarker | None:
        path = self._path(operation_namespace, operation_id, attempt_ordinal)
        try:
            raw = _read_no_follow(path)
        except FileNotFoundError:
            return None
        marker = _decode(raw)
        return StoredMarker(marker, _digest_of(raw), created=False)

    def scan(self) -> Iterator[StoredMarker | UnreadableMarker]:
        if not self._root.is_dir():
            return
        for ns_dir in sorted(p for p in self._root.iterdir() if p.is_dir() and not p.is_symlink()):
            for op_dir in sorted(p for p in ns_dir.iterdir() if p.is_dir() and not p.is_symlink()):
                for file in sorted(op_dir.iterdir()):
                    match = _ORDINAL_FILE.match(file.name)
                    if match is None:
                        continue  # temporary files of an interrupted publish are not markers
                    try:
                        raw = _read_no_follow(file)
                    except OSError:
                        raw = b""  # a planted symlink: never followed, counted as an unreadable marker
                    digest = _digest_of(raw)
                    try:
                        yield StoredMarker(_decode(raw), digest, created=False)
                    except (ValueError, TypeError, KeyError):
                        yield UnreadableMarker(ns_dir.name, op_dir.name, int(match.group(1)), digest)
