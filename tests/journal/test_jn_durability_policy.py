"""The PostgreSQL durability rule, pure: fsync on and synchronous_commit at least `on`."""

from __future__ import annotations

import pytest

from sink.journal.durability import check_postgres_settings
from sink.journal.port import JournalDurabilityNotProven, UnavailableCode, UnavailableOutcome


@pytest.mark.parametrize("level", ["off", "local", "remote_write", "OFF", "bogus"])
def test_synchronous_commit_below_on_is_refused(level: str) -> None:
    with pytest.raises(JournalDurabilityNotProven, match="synchronous_commit") as refused:
        check_postgres_settings("on", level, transaction="submit")
    assert f"submit: synchronous_commit={level} is below on;" in str(refused.value)
    assert refused.value.code is UnavailableCode.DURABILITY_NOT_PROVEN
    assert refused.value.outcome is UnavailableOutcome.NOT_SENT and refused.value.exit_code == 3


@pytest.mark.parametrize("level", ["on", "remote_apply", " On "])
def test_synchronous_commit_on_or_stronger_passes(level: str) -> None:
    check_postgres_settings("on", level, transaction="submit")


@pytest.mark.parametrize("fsync", ["off", "false", ""])
def test_fsync_not_on_is_refused_whatever_synchronous_commit_says(fsync: str) -> None:
    with pytest.raises(JournalDurabilityNotProven, match="fsync"):
        check_postgres_settings(fsync, "remote_apply", transaction="submit")
