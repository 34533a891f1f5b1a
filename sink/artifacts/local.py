"""Local content-addressed artifact directory: the embedded default ``ImmutableArtifactPort``.

Layout: ``objects/sha256/<2 hex>/<62 hex>`` (read-only files), ``roots/<name>`` (a digest in
text), ``tmp/`` (uploads in progress). Publication: stream into ``tmp`` while hashing, fsync,
then ``os.link`` to the final name (atomic, and fails when the name exists: create-if-absent
without a check-then-act race), fsync the directory, drop the temporary name. A crash leaves
either nothing under the final name or the complete bytes; ``tmp`` leftovers are harmless.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from sink.artifacts.port import (
    DEFAULT_CHUNK_BYTES,
    ArtifactConflict,
    ArtifactCorrupt,
    ArtifactMissing,
    ArtifactRef,
)

_DIGEST = re.compile(r"^sha256:([0-9a-f]{64})\Z")
_ROOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")


def _hex(digest: str) -> str:
    match = _DIGEST.fullmatch(digest)
    if match is None:
        raise ValueError("an artifact name is sha256:<64 lowercase hex>")
    return match.group(1)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LocalFileArtifact:
    """One stored object; ``chunks()`` re-verifies length and digest on every read."""

    def __init__(self, path: Path, digest: str, length: int, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> None:
        self._path = path
        self._digest = digest
        self._length = length
        self._chunk_bytes = chunk_bytes

    @property
    def length(self) -> int:
        return self._length

    @property
    def digest(self) -> str:
        return self._digest

    @property
    def path(self) -> Path:
        return self._path

    def chunks(self) -> Iterator[bytes]:
        hasher = hashlib.sha256()
        seen = 0
        with self._path.open("rb") as handle:
            pending = handle.read(self._chunk_bytes)
            while pending:
                following = handle.read(self._chunk_bytes)
                hasher.update(pending)
                seen += len(pending)
                # Hold the last chunk back until the whole object is proven intact.
                if not following and not self._intact(seen, hasher.hexdigest()):
                    raise ArtifactCorrupt(f"{self._digest} does not match its stored bytes")
                yield pending
                pending = following
        if seen == 0 and not self._intact(0, hasher.hexdigest()):
            raise ArtifactCorrupt(f"{self._digest} does not match its stored bytes")

    def _intact(self, seen: int, hexdigest: str) -> bool:
        return seen == self._length and "sha256:" + hexdigest == self._digest

    def read_all(self, limit: int) -> bytes:
        """Small documents only: refuses anything longer than ``limit``."""
        if self._length > limit:
            raise ArtifactCorrupt(f"{self._digest} is larger than a document may be")
        return b"".join(self.chunks())


class LocalArtifactStore:
    def __init__(self, root: Path | str, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES, create: bool = True) -> None:
        """``create=False`` opens an existing store without creating anything (read-only commands):
        a missing store raises ArtifactMissing."""
        self.root = Path(root)
        self._chunk_bytes = chunk_bytes
        if not create:
            if not (self.root / "objects").is_dir():
                raise ArtifactMissing(f"no artifact store at {self.root}")
            return
        for sub in ("objects/sha256", "roots", "tmp"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    def _object_path(self, digest: str) -> Path:
        hexdigest = _hex(digest)
        return self.root.joinpath("objects", "sha256", hexdigest[:2], hexdigest[2:])

    def put(self, chunks: Iterable[bytes], *, expected_digest: str | None = None) -> ArtifactRef:
        tmp = self.root / "tmp" / f"{uuid.uuid4().hex}.part"
        hasher = hashlib.sha256()
        length = 0
        try:
            with tmp.open("xb") as handle:
                for chunk in chunks:
                    hasher.update(chunk)
                    length += len(chunk)
                    handle.write(chunk)
                handle.flush()
                os.fsync(handle.fileno())
            digest = "sha256:" + hasher.hexdigest()
            if expected_digest is not None and digest != expected_digest:
                raise ArtifactConflict(f"bytes hash to {digest}, expected {expected_digest}")
            return self._publish(tmp, digest, length)
        finally:
            tmp.unlink(missing_ok=True)

    def _publish(self, tmp: Path, digest: str, length: int) -> ArtifactRef:
        final = self._object_path(digest)
        final.parent.mkdir(exist_ok=True)
        os.chmod(tmp, 0o444)
        try:
            os.link(tmp, final)
        except FileExistsError:
            self._verify_existing(final, digest, length)
            return ArtifactRef(digest, length, created=False)
        _fsync_dir(final.parent)
        return ArtifactRef(digest, length, created=True)

    def _verify_existing(self, final: Path, digest: str, length: int) -> None:
        try:
            for _ in LocalFileArtifact(final, digest, length, self._chunk_bytes).chunks():
                pass
        except ArtifactCorrupt:
            raise ArtifactConflict(f"{digest} already exists with different bytes") from None

    def put_bytes(self, data: bytes) -> ArtifactRef:
        return self.put([data])

    def open(self, digest: str) -> LocalFileArtifact:
        path = self._object_path(digest)
        try:
            length = path.stat().st_size
        except FileNotFoundError:
            raise ArtifactMissing(f"{digest} is not stored") from None
        return LocalFileArtifact(path, digest, length, self._chunk_bytes)

    def read_range(self, digest: str, start: int, end: int) -> Iterator[bytes]:
        reader = self.open(digest)
        if not 0 <= start <= end <= reader.length:
            raise ArtifactCorrupt(f"range {start}..{end} lies outside {digest}")
        with reader.path.open("rb") as handle:
            handle.seek(start)
            remaining = end - start
            while remaining > 0:
                chunk = handle.read(min(self._chunk_bytes, remaining))
                if not chunk:
                    raise ArtifactCorrupt(f"{digest} is shorter than its recorded length")
                remaining -= len(chunk)
                yield chunk

    def exists(self, digest: str) -> bool:
        return self._object_path(digest).is_file()

    def list_refs(self) -> Iterator[str]:
        base = self.root / "objects" / "sha256"
        for prefix in sorted(base.iterdir()):
            for item in sorted(prefix.iterdir()):
                candidate = "sha256:" + prefix.name + item.name
                if _DIGEST.fullmatch(candidate):
                    yield candidate

    def age_seconds(self, digest: str) -> float:
        return max(0.0, time.time() - self._object_path(digest).stat().st_mtime)

    def put_root(self, name: str, digest: str) -> None:
        if not _ROOT_NAME.fullmatch(name):
            raise ValueError("a root name is 1-200 characters of A-Z a-z 0-9 . _ -")
        _hex(digest)
        final = self.root / "roots" / name
        tmp = self.root / "tmp" / f"{uuid.uuid4().hex}.root"
        try:
            with tmp.open("x", encoding="ascii") as handle:
                handle.write(digest)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(tmp, final)
            except FileExistsError:
                if final.read_text(encoding="ascii") != digest:
                    raise ArtifactConflict(f"root {name} already points elsewhere") from None
                return
            _fsync_dir(final.parent)
        finally:
            tmp.unlink(missing_ok=True)

    def roots(self) -> Iterator[tuple[str, str]]:
        for item in sorted((self.root / "roots").iterdir()):
            yield item.name, item.read_text(encoding="ascii").strip()
