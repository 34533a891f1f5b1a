"""Fault-space coverage: the space comes from the code's own lists, each row covers the cells of its
fault, a crash point no receiver answer shapes is one cell per family (``any``), and the exclusions
file decides what leaves the figure (``not_meaningful``) and what counts as missing (``not_yet``)."""

from __future__ import annotations

import dataclasses

import pytest

from certification.coverage import (
    ANY_PERSONALITY,
    JOURNAL_RUNS,
    OTHER_JOURNAL,
    RECEIVER_FACING_WRITES,
    Cell,
    Exclusion,
    coverage,
    crash_personality,
    fault_space,
    personalities,
    row_cells,
)
from certification.scenarios import Fault, bundled_rows
from sink.runtime.failpoints import ALL_FAILPOINTS, JOURNAL_WRITES, PREPARATION_POINTS

ROWS = {row.row_id: row for row in bundled_rows()}
SPACE = fault_space()


def test_the_receiver_facing_writes_are_journal_writes_of_the_sink() -> None:
    # A renamed write would silently turn its crash cells into ``any`` cells.
    assert RECEIVER_FACING_WRITES.issubset(JOURNAL_WRITES) and set(JOURNAL_WRITES) != RECEIVER_FACING_WRITES


@pytest.mark.parametrize("point", [*PREPARATION_POINTS, "journal.record_sealed.before", "journal.acquire_lease.after",
                                   "journal.publish_marker.after", "journal.promote_frontier.before",
                                   "journal.release_lease.after"])
def test_a_crash_before_the_reservation_or_after_the_durable_answer_is_the_same_on_every_personality(
        point: str) -> None:
    assert point in ALL_FAILPOINTS
    assert crash_personality(point, "stripe-like") == ANY_PERSONALITY


@pytest.mark.parametrize("point", ["journal.reserve_submitting.after", "journal.record_submit_result.before",
                                   "journal.record_verification.after", "journal.record_poll_result.before",
                                   "http.submit.after_body_sent", "http.poll.before_send",
                                   "http.summary.after_response_body"])
def test_a_crash_around_a_receiver_answer_belongs_to_the_personality(point: str) -> None:
    assert point in ALL_FAILPOINTS
    assert crash_personality(point, "stripe-like") == "stripe-like"


def test_the_space_has_each_personality_family_and_journal_once_per_cell() -> None:
    assert len(SPACE) == len(set(SPACE))
    served = personalities()
    assert {"json-batches", "dataset-jobs", "stripe-like", "bare-409"} <= set(served)
    for personality, families in served.items():
        for family in families:
            for journal in ("sqlite", "postgres"):
                mine = [c for c in SPACE if (c.personality, c.family, c.journal) == (personality, family, journal)]
                assert Cell("none", ("none",), family, personality, journal) in mine
                assert not [c for c in mine if c.dimension == "crash_point"
                            and crash_personality(c.key[0], personality) == ANY_PERSONALITY]
    anywhere = {c for c in SPACE if c.personality == ANY_PERSONALITY}
    assert {c.dimension for c in anywhere} == {"crash_point", "journal_server"}
    assert Cell("crash_point", ("freeze.source_read",), "sync_batch", ANY_PERSONALITY, "sqlite") in anywhere
    assert not [c for c in anywhere if c.journal == "sqlite" and c.dimension == "journal_server"]


def test_a_crash_row_covers_the_family_wide_cell_or_its_personalitys_own() -> None:
    freeze = ROWS["sync.failpoint.freeze.source_read"]
    assert row_cells(freeze, "sqlite") == [Cell("crash_point", ("freeze.source_read",), "sync_batch",
                                                ANY_PERSONALITY, "sqlite")]
    stripe = ROWS["sync.stripe.failpoint.http.submit.after_body_sent"]
    assert row_cells(stripe, "postgres") == [Cell("crash_point", ("http.submit.after_body_sent",), "sync_batch",
                                                  "stripe-like", "postgres")]
    assert all(cell in set(SPACE) for row in ROWS.values() for cell in row_cells(row, "sqlite")
               if row.fault.type != "journal_kill")


@pytest.mark.parametrize(("fault", "cell"), [
    (Fault(type="none"), ("none", ("none",))),
    (Fault(type="proxy", rule={"fault": {"action": "close", "phase": "response"}}), ("http", ("close", "response"))),
    (Fault(type="proxy", rule={"fault": {"action": "truncate"}}), ("http", ("truncate", "response"))),
    (Fault(type="proxy_kill", phase="forwarded"), ("http", ("kill", "forwarded"))),
    (Fault(type="hold_kill_release"), ("http", ("hold", "request"))),
    (Fault(type="receiver_rule", rule={"action": {"kind": "miscount"}}), ("receiver", ("miscount",))),
    (Fault(type="receiver_crash"), ("receiver", ("crash",))),
    (Fault(type="retention_lapse", retention_seconds=5), ("receiver", ("key_expiry",))),
    (Fault(type="tcp_toxic", toxic={"type": "reset_peer", "stream": "upstream"}), ("tcp", ("reset_peer", "upstream"))),
    (Fault(type="tcp_toxic", toxic={"type": "latency"}), ("tcp", ("latency", "downstream"))),
    (Fault(type="connect_timeout"), ("wire", ("connect_stall",))),
])
def test_each_fault_type_names_its_cell(fault: Fault, cell: tuple[str, tuple[str, ...]]) -> None:
    row = dataclasses.replace(ROWS["sync.none"], fault=fault)
    assert row_cells(row, "sqlite") == [Cell(cell[0], cell[1], "sync_batch", "json-batches", "sqlite")]


def test_the_other_journals_cells_are_missing_with_the_codes_reason_whatever_the_file_says() -> None:
    rows = [ROWS["sync.none"]]
    postgres = sum(1 for c in SPACE if c.journal == "postgres")
    result = coverage(rows, "sqlite", exclusions=(Exclusion(cells="*", kind="not_meaningful", why="all"),))
    assert result.not_meaningful == len(SPACE) - postgres - 1  # the rule reaches this journal's cells only
    assert result.not_yet == ((OTHER_JOURNAL.format(journal="postgres", command=JOURNAL_RUNS["postgres"]), postgres),)
    assert result.journal == "sqlite" and result.journal_meaningful == 1 and result.journal_figure == 1.0


def test_exclusions_take_the_first_match_and_only_not_meaningful_leaves_the_figure() -> None:
    rows = [ROWS["sync.none"]]
    sqlite = sum(1 for c in SPACE if c.journal == "sqlite")
    bare = coverage(rows, "sqlite", exclusions=())
    assert bare.covered == 1 and bare.not_meaningful == 0 and len(bare.not_yet) == 1
    assert bare.unexplained_count == sqlite - 1 and len(bare.unexplained) == 50
    assert bare.figure == round(1 / bare.total, 4)
    assert bare.journal_meaningful == sqlite and bare.journal_figure == round(1 / sqlite, 4)
    rules = (Exclusion(cells="*/crash_point:*", kind="not_meaningful", why="crashes"),
             Exclusion(cells="*/sqlite/*", kind="not_yet", why="later"),
             Exclusion(cells="*", kind="not_meaningful", why="never reached: the first match won"))
    ruled = coverage(rows, "sqlite", exclusions=rules)
    crashes = sum(1 for c in SPACE if c.journal == "sqlite" and c.dimension == "crash_point")
    assert ruled.not_meaningful == crashes
    assert ("later", sqlite - crashes - 1) in ruled.not_yet
    assert ruled.unexplained_count == 0
    assert ruled.figure == round(1 / (bare.total - crashes), 4)
    assert ruled.journal_meaningful == sqlite - crashes
    assert ruled.as_dict()["meaningful"] == bare.total - crashes
    assert ruled.as_dict()["journal_coverage"] == round(1 / (sqlite - crashes), 4)


def test_the_bundled_catalogs_explain_every_cell_they_leave() -> None:
    result = coverage(list(ROWS.values()), "sqlite")
    assert result.unexplained_count == 0, result.unexplained[:5]
    assert result.covered > 0 and 0 < result.figure < 1
