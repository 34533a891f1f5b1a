"""Scenario catalogs (schema v2): strict expectations, and every refusal before anything runs -- a v1
catalog, an ending that needs an operator or allows a blocked delivery without a why, a row id in two
catalogs, a target day outside the scope, overrides naming crash points the expansion does not make,
fault fields that do not fit the fault's type."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from certification.history import Ending
from certification.scenarios import (
    BUNDLED,
    CATALOG_SCHEMA,
    CatalogError,
    Expect,
    Fault,
    bundled_rows,
    failpoints_of,
    load_catalog,
    load_catalogs,
)
from sink.runtime.failpoints import ALL_FAILPOINTS, PREPARATION_POINTS

SCENARIOS = BUNDLED.parent


def catalog(tmp_path: Path, rows: list[Any], name: str = "c.yaml", **changes: Any) -> Path:
    document = {"schema_id": CATALOG_SCHEMA, "family": "sync_batch",
                "workload": str(SCENARIOS / "workloads" / "measurements-sync.yaml"),
                "receiver": str(SCENARIOS / "receivers" / "json-batches.yaml"), "binding": "mock_measurements",
                "scope": {"from": "2026-03-01", "to": "2026-03-05"}, "rows": rows, **changes}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document))
    return path


NONE_ROW = {"id": "none", "fault": {"type": "none"}, "expect": {"end": ["first_run"]}}


def test_a_catalog_expands_into_rows_with_their_dataset_and_contract(tmp_path: Path) -> None:
    (row,) = load_catalog(catalog(tmp_path, [NONE_ROW]))
    assert row.row_id == "sync.none" and row.family == "sync_batch" and row.binding == "mock_measurements"
    assert (row.scope_from, row.scope_to) == ("2026-03-01", "2026-03-05")
    assert row.expect == Expect(end=(Ending.FIRST_RUN,)) and row.caught_duplicating == ()
    assert row.dataset is not None and row.dataset.universe[0] == "2026-03-01"
    assert row.contract is not None and row.contract.name == "json-batches"
    assert row.workload.is_absolute() and row.catalog == tmp_path / "c.yaml"


def test_relative_paths_are_read_from_the_catalogs_directory(tmp_path: Path) -> None:
    relative = os.path.relpath(SCENARIOS / "workloads" / "measurements-sync.yaml", tmp_path)
    (row,) = load_catalog(catalog(tmp_path, [NONE_ROW], workload=relative))
    assert row.workload == (SCENARIOS / "workloads" / "measurements-sync.yaml").resolve()
    with pytest.raises(CatalogError, match="cannot be read"):
        load_catalog(catalog(tmp_path, [NONE_ROW], workload="measurements-sync.yaml"))  # not beside the catalog


def test_a_catalog_with_a_tcp_row_puts_every_row_behind_the_tcp_proxy(tmp_path: Path) -> None:
    toxic = {"id": "tcp.reset", "fault": {"type": "tcp_toxic", "toxic": {"type": "reset_peer", "stream": "upstream"}},
             "expect": {"end": ["first_run", "recovery"]}}
    assert [row.catalog_uses_tcp for row in load_catalog(catalog(tmp_path, [NONE_ROW, toxic]))] == [True, True]
    assert [row.catalog_uses_tcp for row in load_catalog(catalog(tmp_path, [NONE_ROW]))] == [False]


def test_the_async_prefix(tmp_path: Path) -> None:
    path = catalog(tmp_path, [NONE_ROW], family="async_bulk_job",
                   workload=str(SCENARIOS / "workloads" / "measurements-async.yaml"),
                   receiver=str(SCENARIOS / "receivers" / "dataset-jobs.yaml"))
    assert [row.row_id for row in load_catalog(path)] == ["async.none"]


def test_the_bundled_catalogs_load_with_unique_ids_and_strict_expectations() -> None:
    rows = bundled_rows()
    ids = [row.row_id for row in rows]
    assert len(ids) == len(set(ids)) and "sync.none" in ids and "async.none" in ids
    for row in rows:
        if set(row.expect.end) & {Ending.OPERATOR, Ending.BLOCKED}:
            assert row.expect.why, row.row_id
    none = next(row for row in rows if row.row_id == "sync.none")
    assert none.expect.end == (Ending.FIRST_RUN,)  # a row that cannot produce an effect: completion, first run


def test_a_v1_catalog_is_refused_with_the_way_forward(tmp_path: Path) -> None:
    path = catalog(tmp_path, [NONE_ROW], schema_id="restproof.fault_matrix_scenarios.v1")
    with pytest.raises(CatalogError, match=r"schema v1 catalogs have no strict expectations; write "
                                           r"restproof\.fault_matrix_scenarios\.v2"):
        load_catalog(path)


@pytest.mark.parametrize("end", [["operator"], ["blocked"], ["first_run", "blocked"], ["recovery", "operator"]])
def test_an_operator_or_blocked_ending_needs_a_why(tmp_path: Path, end: list[str]) -> None:
    row = {"id": "r", "fault": {"type": "none"}, "expect": {"end": end}}
    with pytest.raises(CatalogError, match=r"rows\.0\..*an expectation that accepts an operator step or a blocked "
                                           r"delivery says why"):
        load_catalog(catalog(tmp_path, [row]))
    explained = {**row, "expect": {"end": end, "why": "only the receiver's summary can prove it"}}
    assert load_catalog(catalog(tmp_path, [explained]))[0].expect.why


def test_an_empty_why_is_no_why(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="says why"):
        load_catalog(catalog(tmp_path, [{"id": "r", "fault": {"type": "none"},
                                         "expect": {"end": ["blocked"], "why": ""}}]))


@pytest.mark.parametrize(("row", "where"), [
    ({"id": "r", "fault": {"type": "none"}, "expect": {"end": []}}, "rows.0"),
    ({"id": "r", "fault": {"type": "none"}, "expect": {"end": ["done"]}}, "rows.0"),
    ({"id": "r", "fault": {"type": "none"}}, "rows.0"),
    ({"id": "R!", "fault": {"type": "none"}, "expect": {"end": ["first_run"]}}, "rows.0"),
    ({"id": "r", "fault": {"type": "teleport"}, "expect": {"end": ["first_run"]}}, "rows.0"),
    ({"id": "r", "fault": {"type": "none"}, "expect": {"end": ["first_run"]}, "extra": 1}, "rows.0"),
])
def test_rows_it_refuses(tmp_path: Path, row: dict[str, Any], where: str) -> None:
    with pytest.raises(CatalogError, match=rf"not a scenario catalog \({where}"):
        load_catalog(catalog(tmp_path, [row]))


@pytest.mark.parametrize(("fault", "problem"), [
    ({"type": "proxy"}, "a proxy fault needs rule"),
    ({"type": "receiver_rule"}, "a receiver_rule fault needs rule"),
    ({"type": "proxy_kill"}, "a proxy_kill fault needs phase"),
    ({"type": "failpoint"}, "a failpoint fault needs point"),
    ({"type": "receiver_clock"}, "a receiver_clock fault needs advance_seconds"),
    ({"type": "tcp_toxic"}, "a tcp_toxic fault needs toxic"),
    ({"type": "tcp_toxic", "toxic": {}, "target": "seeded"}, "a tcp_toxic fault cannot target a day"),
    ({"type": "connect_timeout", "target": "seeded"}, "a connect_timeout fault cannot target a day"),
    ({"type": "receiver_clock", "advance_seconds": [0]}, "each clock step is above 0 and at most ten years"),
    ({"type": "receiver_clock", "advance_seconds": [10 * 365 * 86400 + 1]}, "at most ten years"),
    ({"type": "failpoint", "point": "journal.acquire_lease.after", "target": "seeded"},
     "a failpoint fault cannot target a day"),
    ({"type": "failpoint", "point": "x"}, "'x' is not a crash point of sink.runtime.failpoints"),
    ({"type": "receiver_rule", "rule": {}, "target": {"day": "2026-03-01"}}, "cannot target a day"),
    ({"type": "none", "target": "seeded"}, "a none fault cannot target a day"),
])
def test_fault_fields_must_fit_the_type(fault: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        Fault.model_validate(fault)


def test_the_bounds_of_a_clock_step_are_accepted() -> None:
    assert Fault(type="receiver_clock", advance_seconds=(0.001, 10 * 365 * 86400)).advance_seconds


def test_a_target_day_outside_the_scope_is_refused(tmp_path: Path) -> None:
    row = {"id": "cut", "fault": {"type": "proxy", "rule": {}, "target": {"day": "2026-03-05"}},
           "expect": {"end": ["first_run"]}}
    with pytest.raises(CatalogError, match="row cut targets 2026-03-05, outside the scope"):
        load_catalog(catalog(tmp_path, [row]))
    inside = {**row, "fault": {**row["fault"], "target": {"day": "2026-03-04"}}}
    assert load_catalog(catalog(tmp_path, [inside]))[0].fault.target is not None


def test_a_target_day_is_a_date(tmp_path: Path) -> None:
    row = {"id": "cut", "fault": {"type": "proxy", "rule": {}, "target": {"day": "tomorrow"}},
           "expect": {"end": ["first_run"]}}
    with pytest.raises(CatalogError, match="not a scenario catalog"):
        load_catalog(catalog(tmp_path, [row]))


def test_an_expansion_makes_one_row_per_crash_point_with_its_overrides(tmp_path: Path) -> None:
    point = PREPARATION_POINTS[0]
    expansion = {"expand": "failpoints", "kinds": ["prepare"], "expect": {"end": ["recovery"]},
                 "overrides": {point: {"end": ["first_run"]}}}
    rows = load_catalog(catalog(tmp_path, [expansion]))
    assert [row.row_id for row in rows] == [f"sync.failpoint.{p}" for p in PREPARATION_POINTS]
    assert rows[0].expect.end == (Ending.FIRST_RUN,) and rows[1].expect.end == (Ending.RECOVERY,)
    assert rows[0].fault == Fault(type="failpoint", point=point)


def test_overrides_naming_unknown_crash_points_are_refused(tmp_path: Path) -> None:
    expansion = {"expand": "failpoints", "kinds": ["prepare"], "expect": {"end": ["recovery"]},
                 "overrides": {"http.submit.nowhere": {"end": ["first_run"]}, "zzz": {"end": ["first_run"]}}}
    with pytest.raises(CatalogError, match=r"overrides name crash points the expansion does not make: "
                                           r"\['http\.submit\.nowhere', 'zzz'\]"):
        load_catalog(catalog(tmp_path, [expansion]))


def test_an_override_for_a_point_of_another_kind_is_refused(tmp_path: Path) -> None:
    submit = next(point for point in ALL_FAILPOINTS if point.startswith("http.submit."))
    expansion = {"expand": "failpoints", "kinds": ["prepare"], "expect": {"end": ["recovery"]},
                 "overrides": {submit: {"end": ["first_run"]}}}
    with pytest.raises(CatalogError, match="overrides name crash points"):
        load_catalog(catalog(tmp_path, [expansion]))


def test_crash_points_per_kind_and_family() -> None:
    assert failpoints_of(["prepare"], "sync_batch") == tuple(PREPARATION_POINTS)
    sync_journal = failpoints_of(["journal"], "sync_batch")
    async_journal = failpoints_of(["journal"], "async_bulk_job")
    assert set(sync_journal) < set(async_journal)
    assert all(point.endswith((".before", ".after")) for point in async_journal)
    assert not any("record_poll_result" in point or "record_retry_abandoned" in point for point in sync_journal)
    assert not any("record_retry_abandoned" in point for point in async_journal)
    assert any("record_poll_result" in point for point in async_journal)
    assert failpoints_of(["poll"], "sync_batch") == ()
    assert failpoints_of(["poll"], "async_bulk_job") and all(
        point.startswith("http.poll.") for point in failpoints_of(["poll"], "async_bulk_job"))
    assert all(point.startswith("http.summary.") for point in failpoints_of(["summary"], "sync_batch"))
    assert failpoints_of([], "sync_batch") == ()


def test_the_same_row_id_in_two_catalogs_is_refused_before_anything_runs(tmp_path: Path) -> None:
    first, second = catalog(tmp_path, [NONE_ROW], "a.yaml"), catalog(tmp_path, [NONE_ROW], "b.yaml")
    with pytest.raises(CatalogError, match=r"row id sync\.none is in .*a\.yaml and .*b\.yaml: row ids must be "
                                           r"unique across the catalogs of a run"):
        load_catalogs([first, second])
    assert len(load_catalogs([first])) == 1


def test_the_same_row_id_twice_in_one_catalog_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"row id sync\.none is in"):
        load_catalogs([catalog(tmp_path, [NONE_ROW, NONE_ROW])])


@pytest.mark.parametrize(("changes", "problem"), [
    ({"family": "streaming"}, "not a scenario catalog (family"),
    ({"scope": {"from": "2026-03-05", "to": "2026-03-01"}}, "not a non-empty range"),
    ({"workload": "/nonexistent/w.yaml"}, "cannot be read"),
    ({"receiver": str(SCENARIOS / "matrix" / "sync-json-batches.yaml")}, "not a receiver behaviour"),
    ({"unknown": 1}, "not a scenario catalog"),
])
def test_catalogs_it_refuses(tmp_path: Path, changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(CatalogError) as raised:
        load_catalog(catalog(tmp_path, [NONE_ROW], **changes))
    assert problem in str(raised.value) and "c.yaml" in str(raised.value)


def test_a_catalog_without_rows_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"not a scenario catalog \(rows"):
        load_catalog(catalog(tmp_path, []))


def test_a_catalog_that_is_no_yaml_mapping_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("- 1\n")
    with pytest.raises(CatalogError, match="not a scenario catalog"):
        load_catalog(path)
    path.write_text("a: 1\na: 2\n")
    with pytest.raises(CatalogError, match="duplicate key 'a'"):
        load_catalog(path)
