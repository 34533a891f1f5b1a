"""The lease keeper: a live worker's leases are renewed on the journal's clock while its step runs,
and a lease another worker took meanwhile is given up (lost), never taken back."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

from rt_ports import Failpoints, JournalClock, RecordingJournal

from sink.journal.markers import FileMarkerStore
from sink.journal.records import LeaseKind, LeaseRequest
from sink.journal.sqlite.adapter import open_sqlite_journal
from sink.runtime.lease_keeper import LeaseKeeper

TTL = timedelta(seconds=30)
OP = "op_1"


def _journal(tmp_path: Path, clock: JournalClock) -> RecordingJournal:
    return RecordingJournal(tmp_path / "journal.sqlite3", markers=FileMarkerStore(tmp_path / "markers"), clock=clock)


def test_a_held_lease_is_taken_through_its_failpoints_and_renewed_with_its_token(tmp_path: Path) -> None:
    clock, points = JournalClock(), Failpoints()
    journal = _journal(tmp_path, clock)
    keeper = LeaseKeeper(journal, "worker-1", TTL, renew_every_s=3600, failpoint=points)
    with keeper.held(LeaseKind.MUTATION, OP):
        assert points.seen == ["journal.acquire_lease.before", "journal.acquire_lease.after"]
        first = journal.get_lease(LeaseKind.MUTATION, OP)
        clock.advance(20)
        keeper.renew_once()
        renewed = journal.get_lease(LeaseKind.MUTATION, OP)
        assert first is not None and renewed is not None
        assert renewed.fencing_token == first.fencing_token and renewed.expires_at == clock.now + TTL
        clock.advance(20)  # 40 s after taking it: alive only because it was renewed
        assert not keeper.lost(LeaseKind.MUTATION, OP)
        assert renewed.expires_at > clock.now
    assert points.seen == ["journal.acquire_lease.before", "journal.acquire_lease.after"], "renewals pass none"
    keeper.close()


def test_a_lease_that_ran_out_unclaimed_is_taken_again_and_kept(tmp_path: Path) -> None:
    clock = JournalClock()
    journal = _journal(tmp_path, clock)
    keeper = LeaseKeeper(journal, "worker-1", TTL, renew_every_s=3600)
    with keeper.held(LeaseKind.OBSERVATION, OP):
        token = journal.get_lease(LeaseKind.OBSERVATION, OP).fencing_token  # type: ignore[union-attr]
        clock.advance(31)  # a stall longer than the lease; nobody took it meanwhile
        keeper.renew_once()
        lease = journal.get_lease(LeaseKind.OBSERVATION, OP)
        assert lease is not None and lease.owner == "worker-1" and lease.fencing_token == token + 1
        assert not keeper.lost(LeaseKind.OBSERVATION, OP)
    keeper.close()


def test_a_lease_another_worker_took_is_lost_and_never_taken_back(tmp_path: Path) -> None:
    clock = JournalClock()
    journal = _journal(tmp_path, clock)
    keeper = LeaseKeeper(journal, "worker-1", TTL, renew_every_s=3600)
    with keeper.held(LeaseKind.MUTATION, OP):
        clock.advance(31)
        journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, OP, "worker-2", timedelta(seconds=5)))
        keeper.renew_once()  # worker-2 holds it: lost
        assert keeper.lost(LeaseKind.MUTATION, OP)
        clock.advance(6)  # worker-2's lease ran out too: still not ours to take back silently
        keeper.renew_once()
        lease = journal.get_lease(LeaseKind.MUTATION, OP)
        assert lease is not None and lease.owner == "worker-2"
    keeper.close()


def test_a_lease_held_by_another_then_released_is_lost_by_its_token(tmp_path: Path) -> None:
    clock = JournalClock()
    journal = _journal(tmp_path, clock)
    keeper = LeaseKeeper(journal, "worker-1", TTL, renew_every_s=3600)
    with keeper.held(LeaseKind.MUTATION, OP):
        clock.advance(31)
        journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, OP, "worker-2", timedelta(seconds=5)))
        journal.release_lease(LeaseKind.MUTATION, OP, "worker-2")  # took it, acted, released it
        keeper.renew_once()  # the token moved by two: someone else held it in between
        assert keeper.lost(LeaseKind.MUTATION, OP)
    keeper.close()


def test_the_background_keeper_renews_on_the_database_clock_while_the_step_runs(tmp_path: Path) -> None:
    journal = open_sqlite_journal(tmp_path / "journal.sqlite3", markers=FileMarkerStore(tmp_path / "markers"))
    ttl = timedelta(seconds=0.4)
    keeper = LeaseKeeper(journal, "worker-1", ttl)
    try:
        with keeper.held(LeaseKind.OBSERVATION, OP), keeper.held(LeaseKind.OBSERVATION, OP):
            pass  # a nested hold ends without ending the outer one
        with keeper.held(LeaseKind.OBSERVATION, OP):
            time.sleep(1.5)  # almost four lease lifetimes
            lease = journal.get_lease(LeaseKind.OBSERVATION, OP)
            assert lease is not None and lease.owner == "worker-1" and lease.expires_at > journal.now()
            assert not keeper.lost(LeaseKind.OBSERVATION, OP)
        time.sleep(1.0)  # after the step: no more renewals, the lease runs out
        lease = journal.get_lease(LeaseKind.OBSERVATION, OP)
        assert lease is not None and lease.expires_at <= journal.now()
    finally:
        keeper.close()
        journal.close()
