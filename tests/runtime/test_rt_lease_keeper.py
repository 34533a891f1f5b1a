"""The lease keeper: a live worker's leases are renewed on the journal's clock while its step runs,
and a lease another worker took meanwhile is given up (lost), never taken back."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

from rt_ports import Failpoints, JournalClock, RecordingJournal

from sink.journal.markers import FileMarkerStore
from sink.journal.port import JournalUnavailable
from sink.journal.records import Lease, LeaseKind, LeaseRequest
from sink.journal.sqlite.adapter import open_sqlite_journal
from sink.runtime.lease_keeper import MIN_RENEW_EVERY_S, LeaseKeeper

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


def test_renewals_come_every_third_of_the_lease_and_never_faster_than_the_floor(tmp_path: Path) -> None:
    journal = _journal(tmp_path, JournalClock())
    assert LeaseKeeper(journal, "w", timedelta(seconds=30)).renew_every_s == 10.0
    assert LeaseKeeper(journal, "w", timedelta(seconds=1)).renew_every_s == 1 / 3
    assert LeaseKeeper(journal, "w", TTL, renew_every_s=0.001).renew_every_s == MIN_RENEW_EVERY_S
    assert LeaseKeeper(journal, "w", TTL, renew_every_s=2.0).renew_every_s == 2.0


def test_a_lease_never_held_is_not_lost(tmp_path: Path) -> None:
    keeper = LeaseKeeper(_journal(tmp_path, JournalClock()), "w", TTL, renew_every_s=3600)
    assert keeper.lost(LeaseKind.MUTATION, "op_never") is False


class _FlakyFor(RecordingJournal):
    """The journal is unreachable for one lease subject only (a moment's outage of its row's call)."""

    def __init__(self, *args: object, down_for: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.down_for = down_for

    def acquire_lease(self, request: LeaseRequest) -> Lease:
        if request.subject_id == self.down_for and self.down:
            raise JournalUnavailable("down for a moment")
        return super().acquire_lease(request)

    down = False


def test_an_unreachable_journal_for_one_lease_does_not_stop_renewing_the_others(tmp_path: Path) -> None:
    clock = JournalClock()
    journal = _FlakyFor(tmp_path / "journal.sqlite3", markers=FileMarkerStore(tmp_path / "markers"), clock=clock,
                        down_for="op_a")
    keeper = LeaseKeeper(journal, "worker-1", TTL, renew_every_s=3600)
    with keeper.held(LeaseKind.MUTATION, "op_a"), keeper.held(LeaseKind.MUTATION, "op_b"):
        clock.advance(20)
        journal.down = True
        keeper.renew_once()
        renewed = journal.get_lease(LeaseKind.MUTATION, "op_b")
        assert renewed is not None and renewed.expires_at == clock.now + TTL
        assert not keeper.lost(LeaseKind.MUTATION, "op_a"), "an outage is not another owner"
    keeper.close()


def test_the_keeper_thread_is_a_named_daemon(tmp_path: Path) -> None:
    journal = open_sqlite_journal(tmp_path / "journal.sqlite3", markers=FileMarkerStore(tmp_path / "markers"))
    keeper = LeaseKeeper(journal, "worker-1", timedelta(seconds=30))
    try:
        with keeper.held(LeaseKind.MUTATION, OP):
            [thread] = [t for t in threading.enumerate() if t.name == "restproof-lease-keeper"]
            assert thread.daemon, "a worker that never closes its keeper can still exit"
    finally:
        keeper.close()
        journal.close()
