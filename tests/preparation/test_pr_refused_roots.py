"""A refused admission leaves a gc root of its own under the admitted parent's id (roots are published
before the journal commits): resuming compares the source with the ADMITTED topology's frozen parent,
never with the refused one, in whatever order the store lists its roots."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from sink.artifacts import LocalArtifactStore, read_document
from sink.contracts.errors import DeliveryError, ErrorCode
from sink.journal.markers import FileMarkerStore
from sink.journal.sqlite.adapter import open_sqlite_journal
from sink.preparation import TOPOLOGY_SCHEMA_ID, admit, admitted_frozen_parent, build_topology, prepare, seal_all
from sink.source.freeze import load_parent as load_frozen_parent
from tests.payload.pl_helpers import GOLDEN_RECORDS, ListSource, bundled_plan

FROM, TO = date(2026, 3, 1), date(2026, 3, 8)
CORRECTED = [dict(GOLDEN_RECORDS[0], reading="99.000"), *GOLDEN_RECORDS[1:]]


class _OrderedRoots(LocalArtifactStore):
    """Lists its roots forwards or backwards, as another store might."""

    def __init__(self, root: Path, *, backwards: bool) -> None:
        super().__init__(root)
        self._backwards = backwards

    def roots(self) -> Iterator[tuple[str, str]]:  # type: ignore[override]
        listed = list(super().roots())
        return iter(reversed(listed) if self._backwards else listed)


@pytest.mark.parametrize("backwards", [False, True], ids=["forwards", "backwards"])
def test_resume_compares_with_the_admitted_topology_not_a_refused_one(tmp_path: Path, backwards: bool) -> None:
    store = _OrderedRoots(tmp_path / "artifacts", backwards=backwards)
    journal = open_sqlite_journal(tmp_path / "journal.db", markers=FileMarkerStore(tmp_path / "markers"))
    plan = bundled_plan("measurements-sync")
    first = prepare(plan, FROM, TO, source=ListSource(GOLDEN_RECORDS), store=store, journal=journal)
    refused = build_topology(seal_all(plan, FROM, TO, source=ListSource(CORRECTED), store=store), store)
    with pytest.raises(DeliveryError):
        admit(refused, store, journal)
    parent = first.admitted.parent
    assert sum(1 for name, _ in store.roots() if parent.parent_id in name) == 2  # the refused root stays

    assert first.topology is not None
    admitted = read_document(store, first.topology.topology_ref, TOPOLOGY_SCHEMA_ID)["frozen_parent_digest"]
    assert admitted != read_document(store, refused.topology_ref, TOPOLOGY_SCHEMA_ID)["frozen_parent_digest"]
    pinned = admitted_frozen_parent(store, parent.parent_id, parent.parent_plan_digest)
    assert pinned is not None and pinned.rows_ref == load_frozen_parent(store, str(admitted)).rows_ref
    assert prepare(plan, FROM, TO, source=ListSource(GOLDEN_RECORDS), store=store, journal=journal).resumed
    with pytest.raises(DeliveryError) as caught:  # the refused rows never become the pinned ones
        prepare(plan, FROM, TO, source=ListSource(CORRECTED), store=store, journal=journal)
    assert caught.value.code is ErrorCode.INTENT_CONFLICT


def test_no_admitted_topology_among_the_roots_pins_nothing(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")
    journal = open_sqlite_journal(tmp_path / "journal.db", markers=FileMarkerStore(tmp_path / "markers"))
    plan = bundled_plan("measurements-sync")
    first = prepare(plan, FROM, TO, source=ListSource(GOLDEN_RECORDS), store=store, journal=journal)
    assert admitted_frozen_parent(store, first.admitted.parent.parent_id, "sha256:" + "0" * 64) is None
