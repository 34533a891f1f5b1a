"""Per-row histories on disk, bound to the signed matrix by their digest.

The matrix states each row's ``history_digest`` (SHA-256 over the canonical bytes of the history),
so the history files need no signature of their own: a reader recomputes the file's SHA-256 and
compares it with the digest in the signed matrix. Each file is exactly those canonical bytes, at
``histories/<row_id>/<sink>.json`` beside the matrix (row ids and sink names are restricted to
``[a-z0-9._-]`` by their schemas, so they are safe path components).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from certification.canonical_json import canonical_bytes
from certification.publish import publish_bytes

if TYPE_CHECKING:
    from certification.verdicts import RowOutcome

HISTORIES = "histories"
SAFE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,120}\Z")


def history_path(artifacts_dir: Path, row_id: str, sink: str) -> Path | None:
    """Where a row's history for one sink lives; None for a name that is not a safe path component."""
    if not (SAFE_NAME.fullmatch(row_id) and SAFE_NAME.fullmatch(sink)):
        return None
    return artifacts_dir / HISTORIES / row_id / f"{sink}.json"


def write_histories(artifacts_dir: Path, outcomes: Sequence[RowOutcome]) -> list[Path]:
    written = []
    for outcome in outcomes:
        for result in outcome.results:
            path = history_path(artifacts_dir, outcome.row.row_id, result.sink)
            if result.history is None or path is None:
                continue
            publish_bytes(path, canonical_bytes(result.history.canonical()))
            written.append(path)
    return written
