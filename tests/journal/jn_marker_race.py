"""The publisher a marker race test spawns. It lives apart from the test module on purpose: a
spawned child re-imports the module of its target, and the test module's ``from conftest import``
resolves to whichever conftest comes first on the worker's sys.path (under xdist, another
directory's), which killed the children before they published."""

from __future__ import annotations

import multiprocessing.queues
import multiprocessing.synchronize
import os
from pathlib import Path

from jn_builders import NAMESPACE, digest

from sink.journal.ids import operation_id_for
from sink.journal.markers import FileMarkerStore, MayAttemptMarker
from sink.journal.records import GenerationKey


def race_marker(created: str) -> MayAttemptMarker:
    return MayAttemptMarker(
        operation_namespace=NAMESPACE, operation_id=operation_id_for(NAMESPACE, "k"), parent_id="op_parent",
        delivery_key="k", attempt_ordinal=1, generation=GenerationKey("2026-09-01T00:00:00Z"),
        expected_revision=1, journal_epoch=1, mutation_intent_digest=digest("intent"), created_at_utc=created,
    )


def race_create(root: str, barrier: multiprocessing.synchronize.Barrier,
                out: multiprocessing.queues.Queue) -> None:  # type: ignore[type-arg]
    barrier.wait(timeout=120)  # six spawned interpreters importing the sink on a loaded machine
    stored = FileMarkerStore(Path(root)).create_if_absent(race_marker(f"2026-09-01T00:00:0{os.getpid() % 10}Z"))
    out.put((stored.created, stored.digest))
