"""RowSession's policy around the services, with stand-ins for them and for RowRunner: services start
once per catalog and serve its later rows; a start failure is kept (not paid again per row); a
service that stops answering mid-row is dropped and the next row starts fresh ones; close stops all
and removes the work directory. The marking for the reaper wraps every start."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from certification.scenarios import bundled_rows
from certification.services import ServiceUnavailable
from certification.sinks import bundled_sinks
from certification.testing import rows as rows_module
from certification.testing.rows import RowSession
from certification.verdicts import PASS, SinkRowResult


class Services:
    def __init__(self) -> None:
        self.started: list[str] = []
        self.stopped: list[str] = []
        self.fail_start: str | None = None
        self.marked_depth = 0
        self.seen_marked: list[bool] = []

    @contextmanager
    def family_services(self, row: Any, work: Path, seed: int, *, start_timeout: float) -> Iterator[str]:
        self.seen_marked.append(self.marked_depth > 0)
        if self.fail_start is not None:
            raise ServiceUnavailable(self.fail_start)
        name = f"{Path(row.catalog).stem}#{len(self.started)}"
        self.started.append(name)
        try:
            yield name
        finally:
            self.stopped.append(name)

    @contextmanager
    def marked(self) -> Iterator[None]:
        self.marked_depth += 1
        try:
            yield
        finally:
            self.marked_depth -= 1


@pytest.fixture
def services(monkeypatch: pytest.MonkeyPatch) -> Services:
    fake = Services()
    outcomes: dict[str, Any] = {}

    class Runner:
        def __init__(self, family: str, row: Any, sink: Any, work: Path, seed: int, **_: Any) -> None:
            self.family, self.row, self.sink = family, row, sink

        def run(self, must_be_caught: bool) -> SinkRowResult:
            fake.seen_marked.append(fake.marked_depth > 0)
            if outcomes.get(self.row.row_id) == "dies":
                raise ServiceUnavailable("fault-proxy control API unreachable: ConnectError")
            return SinkRowResult(self.sink.name, "certified", PASS, None, (0,), f"on {self.family}", 0.0)

    fake.outcomes = outcomes  # type: ignore[attr-defined]
    monkeypatch.setattr(rows_module, "family_services", fake.family_services)
    monkeypatch.setattr(rows_module, "RowRunner", Runner)
    return fake


def _session(services: Services, tmp_path: Path) -> RowSession:
    return RowSession(seed=3, start_timeout=5.0, marked=services.marked, work_root=tmp_path / "work")


def test_a_catalog_starts_its_services_once_and_close_stops_them(services: Services, tmp_path: Path) -> None:
    session = _session(services, tmp_path)
    sink = bundled_sinks()["naive-retry"]
    (tmp_path / "work").mkdir()

    first = session.run(sink, "sync.none")
    second = session.run(sink, "sync.cut.request")
    third = session.run(sink, "async.none")

    assert services.started == ["sync-json-batches#0", "async-dataset-jobs#1"]
    assert [first.result.history_digest, second.result.history_digest, third.result.history_digest] == [
        "on sync-json-batches#0", "on sync-json-batches#0", "on async-dataset-jobs#1"]
    assert all(services.seen_marked)  # every start of a process happens under the reaper's mark
    session.close()
    assert sorted(services.stopped) == sorted(services.started)
    assert not (tmp_path / "work").exists()


def test_a_start_failure_is_kept_for_the_catalog(services: Services, tmp_path: Path) -> None:
    session = _session(services, tmp_path)
    sink = bundled_sinks()["naive-retry"]
    services.fail_start = "mock-receiver was not ready within 5 s"

    with pytest.raises(ServiceUnavailable, match=r"^mock-receiver was not ready within 5 s$"):
        session.run(sink, "sync.none")
    services.fail_start = None  # it would start now, but the catalog is not tried again
    with pytest.raises(ServiceUnavailable, match=r"within 5 s \(an earlier row of this catalog met it\)"):
        session.run(sink, "sync.cut.request")
    assert session.run(sink, "async.none").passed  # another catalog is another start
    assert services.seen_marked.count(True) == len(services.seen_marked)
    session.close()


def test_services_that_die_mid_row_are_replaced_for_the_next_row(services: Services, tmp_path: Path) -> None:
    session = _session(services, tmp_path)
    sink = bundled_sinks()["naive-retry"]
    services.outcomes["sync.cut.request"] = "dies"  # type: ignore[attr-defined]

    session.run(sink, "sync.none")
    with pytest.raises(ServiceUnavailable, match="unreachable"):
        session.run(sink, "sync.cut.request")
    assert services.stopped == ["sync-json-batches#0"]
    assert session.run(sink, "sync.cut.after_commit").result.history_digest == "on sync-json-batches#1"
    session.close()


def test_an_unknown_row_or_sink_file_is_named(services: Services, tmp_path: Path) -> None:
    session = _session(services, tmp_path)

    with pytest.raises(LookupError, match=r"no row 'sync.nope' in the catalogs \("):
        session.run(bundled_sinks()["naive-retry"], "sync.nope")
    with pytest.raises(ValueError, match=r"missing\.yaml"):
        session.run(tmp_path / "missing.yaml", "sync.none")
    assert len(session.rows) == len(bundled_rows())
    assert services.started == []
