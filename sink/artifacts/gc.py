"""Which artifacts no admitted parent needs (``delivery gc --dry-run``).

Live set: every root whose parent the journal has admitted (or every root, without a journal),
closed over the ``refs`` of the documents it reaches. A root is published BEFORE its admission
is attempted, so a crash between the two leaves a root whose parent is unknown to the journal:
its artifacts are then orphans, as they should be, and never the other way round. Artifacts
younger than the grace period are skipped: a preparation may be publishing them right now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sink.artifacts.documents import MAX_DOCUMENT_BYTES, document_refs
from sink.artifacts.port import ArtifactError, ImmutableArtifactPort

ROOT_PREFIX = "parent-"


@dataclass(frozen=True, slots=True)
class GcReport:
    live: tuple[str, ...]
    unreferenced: tuple[str, ...]
    young: tuple[str, ...]
    dead_roots: tuple[str, ...]
    """Roots whose parent the journal has not admitted (their artifacts are orphans)."""


def _children(store: ImmutableArtifactPort, digest: str) -> tuple[str, ...]:
    try:
        reader = store.open(digest)
        if reader.length > MAX_DOCUMENT_BYTES:
            return ()
        return document_refs(b"".join(reader.chunks()))
    except ArtifactError:
        return ()


def collect(
    store: ImmutableArtifactPort,
    *,
    parent_admitted: Callable[[str], bool] | None = None,
    grace_seconds: float = 3600.0,
) -> GcReport:
    live: set[str] = set()
    dead_roots: list[str] = []
    frontier: list[str] = []
    for name, digest in store.roots():
        parent_id = name.removeprefix(ROOT_PREFIX)
        if parent_admitted is not None and name.startswith(ROOT_PREFIX) and not parent_admitted(parent_id):
            dead_roots.append(name)
            continue
        frontier.append(digest)
    while frontier:
        digest = frontier.pop()
        if digest in live:
            continue
        live.add(digest)
        frontier.extend(ref for ref in _children(store, digest) if ref not in live)
    unreferenced: list[str] = []
    young: list[str] = []
    for digest in store.list_refs():
        if digest in live:
            continue
        (young if store.age_seconds(digest) < grace_seconds else unreferenced).append(digest)
    return GcReport(tuple(sorted(live)), tuple(sorted(unreferenced)), tuple(sorted(young)), tuple(sorted(dead_roots)))
