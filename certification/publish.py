"""Create-if-absent publication of evidence files (seed: "Publication is create-if-absent and
digest verified; overwriting evidence is forbidden").

Bytes go to a private temporary file, are fsynced, then hard-linked to the final name: the link
fails when the name exists, so two writers never interleave and a reader never sees half a file.
Publishing identical bytes again is a no-op; different bytes under an existing name are refused.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


class EvidenceConflict(FileExistsError):
    """The name already holds different evidence: evidence is never overwritten."""


def publish_bytes(path: Path, data: bytes) -> bool:
    """Publish ``data`` at ``path``. True when this call created it, False when identical bytes
    were already there; EvidenceConflict when different bytes were."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=".publish-", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            if path.read_bytes() == data:
                return False
            raise EvidenceConflict(f"{path} exists with different content; evidence is never overwritten") from None
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
