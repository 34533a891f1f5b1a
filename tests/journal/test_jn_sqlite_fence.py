"""SQLite fence reads: SQL selects the overlapping candidates, so a submit's cost does not grow
with the number of operations in its effect-conflict domain."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from jn_builders import CAPACITY, admission, child, instant, seal, submit

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.journal.markers import FileMarkerStore
from sink.journal.records import OperationRow
from sink.journal.sqlite import codec
from sink.journal.sqlite.adapter import open_sqlite_journal

pytestmark = pytest.mark.timeout(60)

DOMAIN_SIZE = 300


def test_submit_decodes_only_overlapping_operations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    markers = FileMarkerStore(tmp_path / "m")
    journal = open_sqlite_journal(tmp_path / "j.db", markers=markers)
    try:
        journal.configure_capacity(CAPACITY, 8)
        hours = [child(i, instant(i), instant(i + 1), key=f"big.c{i}") for i in range(DOMAIN_SIZE)]
        ops = journal.admit_parent(admission("big", hours)).children
        middle = seal(journal, ops[DOMAIN_SIZE // 2])
        submit(journal, markers, middle)  # in flight: must still block an overlapping submit
        decoded: list[str] = []
        real: Callable[..., OperationRow] = codec.operation_from_row

        def counting(row: object) -> OperationRow:
            found = real(row)
            decoded.append(found.operation_id)
            return found

        # The SQLite reads decode rows through the name imported into the inspection module.
        monkeypatch.setattr("sink.journal.sqlite.inspection.operation_from_row", counting)
        neighbour = seal(journal, ops[DOMAIN_SIZE // 2 + 1])  # touches `middle`, overlaps nothing
        decoded.clear()
        submit(journal, markers, neighbour)
        # The candidate itself is read (and re-read after the CAS); no other row of the domain.
        assert set(decoded) == {neighbour.operation_id}

        overlap = seal(journal, journal.admit_parent(admission("overlap", [
            child(0, instant(DOMAIN_SIZE // 2), instant(DOMAIN_SIZE // 2 + 2), key="overlap.c0",
                  domain="domain-a"),
        ])).children[0])
        decoded.clear()
        with pytest.raises(DeliveryError) as caught:
            submit(journal, markers, overlap)
        assert caught.value.code is ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT
        assert set(decoded) == {overlap.operation_id, middle.operation_id, neighbour.operation_id}
    finally:
        journal.close()
