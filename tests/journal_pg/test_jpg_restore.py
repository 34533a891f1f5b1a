"""Restore an older base backup of the PostgreSQL journal: no grant is ever repeated.

Base backup (pg_basebackup), then grants are committed, then the server is replaced by the
backup (the marker store, another failure domain, keeps every marker and grant claim). On the
restored journal every operation whose grant was lost refuses its next submit as an orphan
(possible remote effect), the others go on; after the runbook's ``block_mutations`` every submit
is refused with JOURNAL_EPOCH_BLOCKED while the orphan report stays readable.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from jpg_crash_support import check_invariants
from jpg_support import CAPACITY, daily_parent, publish_marker, seal, submit, submit_request

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.journal.marker_policy import ORPHAN_CLAIMED_REASON
from sink.journal.markers import FileMarkerStore
from sink.journal.port import JournalRejection, RejectionReason
from sink.journal.postgres import open_postgres_journal
from sink.journal.postgres.cluster import Cluster, ClusterSet, free_port
from sink.journal.records import Actor, ActorKind, LeaseKind, LeaseRequest

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]

OPERATOR = Actor(ActorKind.OPERATOR, "oncall-1")


@pytest.fixture
def clusters() -> Iterator[ClusterSet]:
    made = ClusterSet()
    try:
        yield made
    finally:
        made.destroy_all()


def _restore_backup(primary: Cluster, backup_name: str) -> Cluster:
    """Stop the primary and start a server on the base backup (a point-in-time older journal)."""
    primary.stop("fast")
    restored = Cluster(bin_dir=primary.bin_dir, base_dir=primary.base_dir, port=free_port(), name=backup_name,
                       owned_base=False)
    restored.configure({"port": restored.port})
    restored.start()
    return restored


def test_jpg_restored_backup_blocks_lost_grants_and_never_repeats_one(clusters: ClusterSet, tmp_path: Path) -> None:
    primary = clusters.primary({"fsync": "on", "synchronous_commit": "on"})
    schema = "restore_" + uuid.uuid4().hex[:8]
    markers = FileMarkerStore(tmp_path / "markers")
    journal = open_postgres_journal(primary.dsn(), schema=schema, markers=markers, connect_timeout_s=5)
    journal.configure_capacity(CAPACITY, 8)
    ops = [seal(journal, c) for c in journal.admit_parent(daily_parent("restore", 4)).children]
    kept = submit(journal, markers, ops[0], "w1")  # in the backup
    primary.run_tool("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                     "-D", str(primary.base_dir / "backup"), "-X", "stream", "-c", "fast", "--no-sync")
    lost = [submit(journal, markers, op, "w1") for op in ops[1:3]]  # granted after the backup
    untouched = ops[3]
    journal.close()

    restored = clusters.adopt(_restore_backup(primary, "backup"))
    journal = open_postgres_journal(restored.dsn(), schema=schema, markers=markers, connect_timeout_s=5)
    try:
        assert journal.list_attempts(ops[0].operation_id) == (kept.attempt,)
        orphans = {o.attempt_id: o.reason for o in journal.find_orphan_markers()}
        assert orphans == {g.attempt.attempt_id: ORPHAN_CLAIMED_REASON for g in lost}
        for grant in lost:
            rewound = journal.get_operation(grant.operation.operation_id)
            assert rewound is not None and rewound.attempt_count == 0
            journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, rewound.operation_id, "w1"))
            with pytest.raises(JournalRejection) as refused:
                journal.reserve_and_mark_submitting(
                    submit_request(rewound, publish_marker(journal, markers, rewound), "w1"))
            assert refused.value.reason is RejectionReason.ORPHAN_MARKER
        # The runbook closes the gate after a restore without zero-RPO proof: nothing is granted.
        journal.block_mutations(reason="restored from base backup", actor=OPERATOR)
        with pytest.raises(DeliveryError) as blocked:
            submit(journal, markers, untouched, "w1")
        assert blocked.value.code is ErrorCode.JOURNAL_EPOCH_BLOCKED
        grants = [(g.operation.operation_id, g.attempt.attempt_ordinal, g.attempt.attempt_id) for g in [kept, *lost]]
        counts = check_invariants(journal, markers, [op.operation_id for op in ops], grants, CAPACITY)
        # Orphans: the two lost grants (claimed) and the marker the refused submit published.
        assert counts == {"grants": 3, "lost_grants": 2, "orphans": 3, "submitting": 1}
    finally:
        journal.close()
