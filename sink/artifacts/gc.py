"""Which artifacts no admitted parent needs (``delivery gc --dry-run``).

Live set: every root whose parent the journal has admitted WITH that root's
``parent_plan_digest`` (or every root, without a journal), closed over the ``refs`` of the
documents it reaches. A root (``parent-<parent id>.<topology digest prefix>``) is published
BEFORE its admission is attempted, so a crash between the two leaves a root the journal does not
confirm: its artifacts are then orphans, as they should be, and never the other way round. A
retried preparation with different bytes publishes a second root for the same parent; only the
admitted one keeps its artifacts alive. Artifacts
younger than the grace period are skipped: a preparation may be publishing them right now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sink.artifacts.documents import MAX_DOCUMENT_BYTES, document_refs, read_document
from sink.artifacts.port import ArtifactError, ImmutableArtifactPort

ROOT_PREFIX = "parent-"


def root_name(parent_id: str, topology_digest: str) -> str:
    return f"{ROOT_PREFIX}{parent_id}.{topology_digest.removeprefix('sha256:')[:16]}"


def _root_parent(name: str) -> str | None:
    if not name.startswith(ROOT_PREFIX):
        return None
    return name[len(ROOT_PREFIX):].split(".", 1)[0]


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


def _plan_digest_of(store: ImmutableArtifactPort, digest: str) -> str | None:
    try:
        value = read_document(store, digest).get("parent_plan_digest")
    except ArtifactError:
        return None
    return value if isinstance(value, str) else None


def collect(
    store: ImmutableArtifactPort,
    *,
    admitted_plan_digest: Callable[[str], str | None] | None = None,
    grace_seconds: float = 3600.0,
) -> GcReport:
    live: set[str] = set()
    dead_roots: list[str] = []
    frontier: list[str] = []
    for name, digest in store.roots():
        parent_id = _root_parent(name)
        if admitted_plan_digest is not None and parent_id is not None:
            admitted = admitted_plan_digest(parent_id)
            if admitted is None or admitted != _plan_digest_of(store, digest):
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
