"""restproof in a sink developer's own pytest (docs/pytest-plugin.md).

Registered through the ``pytest11`` entry point (or ``-p certification.pytest_plugin``). Without a
``--restproof-sink`` it adds no test and starts nothing until a test asks for a fixture:

* ``restproof_receiver``: a mock receiver (a bundled personality by name, or a behaviour file, chosen
  with ``@pytest.mark.restproof_receiver(...)`` or indirect parametrization), ``restproof_proxy``: a
  fault proxy in front of it, ``restproof_tcp_proxy``: the TCP fault proxy; each on free 127.0.0.1
  ports, stopped after the test, driven through a typed client;
* ``restproof_matrix`` (session): run a sink on a catalog row and read ``certify run``'s own verdict,
  history and checker results;
* ``--restproof-sink FILE``: one test item per catalog row for that sink, named by the row id, failing
  with the checkers' reasons.

Every part starts within ``--restproof-start-timeout`` or fails the test with what went wrong, and
every process restproof starts ends with the pytest process, however that ends
(``certification.testing.reaper``).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from certification.testing.reaper import Reaper

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from certification.scenarios import Row
    from certification.services import Proxy, Receiver
    from certification.sinks import SinkSpec
    from certification.testing.parts import TcpProxy
    from certification.testing.rows import RowReport, RowSession

# This module is loaded into every pytest run of an environment where restproof is installed: it
# imports the harness (pydantic models, the compiler's failpoint list, FastAPI) only when a test or
# an option needs it, so a run that uses none of it does not pay for it.

DEFAULT_RUN_TIMEOUT_S = 120.0
"""``certification.sinks.RUN_TIMEOUT_S``, as ``certify run`` uses it."""
DEFAULT_START_TIMEOUT_S = 60.0
"""Each part's start-up bound: generous for a loaded CI machine, short enough to fail, not hang."""
DEFAULT_PERSONALITY = "json-batches"
T = TypeVar("T")


@dataclass
class _State:
    sinks: tuple[SinkSpec, ...]
    catalogs: tuple[Path, ...]
    """Empty: the bundled catalogs."""
    row_patterns: tuple[str, ...]
    seed: int
    run_timeout: float
    start_timeout: float
    reaper: Reaper = field(default_factory=Reaper)
    rows_of_sink: dict[str, tuple[Row, ...]] = field(default_factory=dict)
    not_applicable: dict[str, int] = field(default_factory=dict)
    session: RowSession | None = None

    def row_session(self) -> RowSession:
        from certification.testing.rows import RowSession, bundled_catalogs  # noqa: PLC0415

        if self.session is None:
            self.session = RowSession(self.catalogs or bundled_catalogs(), self.seed, self.run_timeout,
                                      self.start_timeout, self.reaper.marked)
        return self.session


_STATE = pytest.StashKey[_State]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("restproof", "restproof: catalog rows and the real parts as fixtures")
    group.addoption("--restproof-sink", action="append", default=[], metavar="FILE",
                    help="Run the catalog rows on this sink (restproof.sink_under_test.v2), one test per row; "
                         "repeatable.")
    group.addoption("--restproof-catalog", action="append", default=[], metavar="FILE",
                    help="Scenario catalog to take rows from; repeatable [default: the bundled catalogs].")
    group.addoption("--restproof-row", action="append", default=[], metavar="PATTERN",
                    help="Only rows whose id matches this shell pattern (sync.cut.*); repeatable.")
    group.addoption("--restproof-seed", type=int, default=0, metavar="N",
                    help="Seed of the fault proxies and of seeded fault targets [default: 0].")
    group.addoption("--restproof-run-timeout", type=float, default=DEFAULT_RUN_TIMEOUT_S, metavar="S",
                    help=f"A sink run still going after S seconds is killed and its row fails [default: "
                         f"{DEFAULT_RUN_TIMEOUT_S:g}].")
    group.addoption("--restproof-start-timeout", type=float, default=DEFAULT_START_TIMEOUT_S, metavar="S",
                    help=f"A part not ready after S seconds fails the test [default: {DEFAULT_START_TIMEOUT_S:g}].")


def _select(rows: Sequence[Row], patterns: Sequence[str]) -> list[Row]:
    if not patterns:
        return list(rows)
    idle = [pattern for pattern in patterns if not any(fnmatch.fnmatchcase(row.row_id, pattern) for row in rows)]
    if idle:
        raise pytest.UsageError(f"restproof: --restproof-row {idle[0]!r} matches no row of the catalogs")
    return [row for row in rows if any(fnmatch.fnmatchcase(row.row_id, pattern) for pattern in patterns)]


def _state_of(config: pytest.Config) -> _State:
    option = config.option
    for name in ("run_timeout", "start_timeout"):
        if not getattr(option, f"restproof_{name}") > 0:
            raise pytest.UsageError(f"restproof: --restproof-{name.replace('_', '-')} must be above 0")
    catalogs = tuple(Path(path).resolve() for path in option.restproof_catalog)
    state = _State((), catalogs, tuple(option.restproof_row), option.restproof_seed, option.restproof_run_timeout,
                   option.restproof_start_timeout)
    if not option.restproof_sink:
        return state
    from certification.scenarios import CatalogError, load_catalogs  # noqa: PLC0415
    from certification.sinks import SinkFileError, load_sink  # noqa: PLC0415
    from certification.testing.rows import bundled_catalogs  # noqa: PLC0415

    try:
        sinks = tuple(load_sink(Path(path)) for path in option.restproof_sink)
        rows = _select(load_catalogs(list(catalogs or bundled_catalogs())), state.row_patterns)
    except (SinkFileError, CatalogError, OSError) as exc:
        raise pytest.UsageError(f"restproof: {str(exc).splitlines()[0][:400]}") from None
    names = [spec.name for spec in sinks]
    if len(set(names)) != len(names):
        raise pytest.UsageError(f"restproof: two --restproof-sink files name the same sink ({', '.join(names)})")
    state.sinks = sinks
    for spec in sinks:
        # A crash-point row needs the sink to honour RESTPROOF_FAILPOINT; for any other sink it is no test.
        applicable = tuple(row for row in rows if spec.failpoints or row.fault.type != "failpoint")
        state.rows_of_sink[spec.name] = applicable
        state.not_applicable[spec.name] = len(rows) - len(applicable)
    return state


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "restproof_receiver(personality): the mock receiver's personality "
                                       "(a bundled name or a behaviour file) for the restproof_receiver fixture")
    config.addinivalue_line("markers", "restproof_row: a catalog row run by --restproof-sink")
    config.stash[_STATE] = _state_of(config)


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(_STATE, None)
    if state is None or not state.sinks:
        return []
    lines = []
    for spec in state.sinks:
        skipped = state.not_applicable[spec.name]
        note = f"; {skipped} crash-point rows left out: it does not honour RESTPROOF_FAILPOINT" if skipped else ""
        lines.append(f"restproof: sink {spec.name}: {len(state.rows_of_sink[spec.name])} rows "
                     f"(seed {state.seed}){note}")
    return lines


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so the rows can be selected like any test
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[_STATE]
    for spec in state.sinks:
        name = f"restproof[{spec.name}]"
        collector = SinkRows.from_parent(session, name=name, nodeid=name, sink=spec,
                                         rows=state.rows_of_sink[spec.name])
        items.extend(session.genitems(collector))


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is not None and state.session is not None:
        state.session.close()
        state.session = None


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.reaper.close()


class RowFailed(Exception):
    """A row whose verdict is not PASS (FAIL, or UNVERIFIED: never a pass)."""

    def __init__(self, report: RowReport) -> None:
        super().__init__(report.describe())
        self.report = report


class SinkRows(pytest.Collector):
    """The rows of the catalogs for one sink."""

    def __init__(self, *, sink: SinkSpec, rows: Sequence[Row], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sink, self.rows = sink, tuple(rows)

    def collect(self) -> Iterable[pytest.Item]:
        return [RowItem.from_parent(self, name=row.row_id, sink=self.sink, row=row) for row in self.rows]


class RowItem(pytest.Item):
    """One sink on one catalog row, judged by ``certify run``'s checkers."""

    def __init__(self, *, sink: SinkSpec, row: Row, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sink, self.row = sink, row
        self.add_marker("restproof_row")

    def runtest(self) -> None:
        from certification.verdicts import NOT_APPLICABLE  # noqa: PLC0415

        report = self.config.stash[_STATE].row_session().run(self.sink, self.row)
        self.user_properties.extend([("restproof_verdict", report.verdict),
                                     ("restproof_history_digest", str(report.result.history_digest))])
        if report.verdict == NOT_APPLICABLE:
            pytest.skip(f"{self.row.row_id} does not apply to {self.sink.name}: {'; '.join(report.reasons)}")
        if not report.passed:
            raise RowFailed(report)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None,
                     ) -> str | TerminalRepr:
        if isinstance(excinfo.value, RowFailed):
            return str(excinfo.value)
        from certification.services import RuleRefused, ServiceUnavailable  # noqa: PLC0415

        if isinstance(excinfo.value, ServiceUnavailable | RuleRefused):
            return f"restproof: {self.row.row_id}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, None, f"restproof row {self.row.row_id} [{self.sink.name}]"


def _serve(config: pytest.Config, part: AbstractContextManager[T]) -> Iterator[T]:
    """Start ``part`` (marked for the reaper), fail the test clearly if it cannot start, stop it after."""
    from certification.services import ServiceUnavailable  # noqa: PLC0415

    stack = ExitStack()
    try:
        with config.stash[_STATE].reaper.marked():
            started = stack.enter_context(part)
    except (ServiceUnavailable, ValueError) as exc:
        stack.close()
        pytest.fail(f"restproof: {exc}", pytrace=False)
    with stack:
        yield started


def _personality(request: pytest.FixtureRequest) -> str | Path:
    chosen = getattr(request, "param", None)
    marker = request.node.get_closest_marker("restproof_receiver")
    if chosen is None and marker is not None and marker.args:
        chosen = marker.args[0]
    return chosen if isinstance(chosen, str | Path) else DEFAULT_PERSONALITY


@pytest.fixture
def restproof_receiver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Receiver]:
    """A mock receiver on free ports (``.data_url``; its admin API through the client's methods)."""
    from certification.testing import parts  # noqa: PLC0415

    state = request.config.stash[_STATE]
    yield from _serve(request.config, parts.receiver(_personality(request), tmp_path / "restproof-receiver",
                                                     start_timeout=state.start_timeout))


@pytest.fixture
def restproof_proxy(request: pytest.FixtureRequest, restproof_receiver: Receiver, tmp_path: Path) -> Iterator[Proxy]:
    """A fault proxy in front of ``restproof_receiver`` (``.url`` is where the sink under test sends)."""
    from certification.testing import parts  # noqa: PLC0415

    state = request.config.stash[_STATE]
    yield from _serve(request.config, parts.fault_proxy(restproof_receiver.data_url, tmp_path / "restproof-proxy",
                                                        seed=state.seed, start_timeout=state.start_timeout))


@pytest.fixture
def restproof_tcp_proxy(request: pytest.FixtureRequest) -> Iterator[TcpProxy]:
    """A Toxiproxy-compatible TCP fault proxy (``create`` a proxy, ``add_toxic``, ``reset``)."""
    from certification.testing import parts  # noqa: PLC0415

    state = request.config.stash[_STATE]
    yield from _serve(request.config, parts.tcp_proxy(seed=state.seed, start_timeout=state.start_timeout))


@pytest.fixture(scope="session")
def restproof_matrix(pytestconfig: pytest.Config) -> RowSession:
    """Run a sink on a catalog row (``run(sink, row_id)``) and read its ``RowReport``. The services of a
    catalog start on first use and stay up for the session (one set per xdist worker)."""
    return pytestconfig.stash[_STATE].row_session()
