"""The plugin's pieces without a pytest process of their own: the row report read from the judge's
result, personalities, the typed TCP proxy client, and the reaper."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_runs import wait_until

from certification.checkers import check_all
from certification.exercise import exercised
from certification.history import DayState, Effect, FaultEvidence, History, Run, RunKind, Snapshot
from certification.scenarios import bundled_rows
from certification.services import ServiceUnavailable
from certification.testing.parts import TcpProxy, bundled_personalities, host_port, personality_file
from certification.testing.reaper import MARKER_ENV, Reaper
from certification.testing.rows import RowReport
from certification.verdicts import FAIL, NOT_APPLICABLE, SinkRowResult, certified_verdict
from fault_proxy.tcp.launcher import start_toxiproxy

DAYS = ("2026-03-01", "2026-03-02", "2026-03-03")


def _history(effects: tuple[Effect, ...]) -> History:
    states = tuple(DayState(day, 2, 2, 0, 0, 0, "d") for day in DAYS)
    return History(
        row_id="sync.cut.after_commit", sink="toy", universe=DAYS, expected_digest="e",
        mutation_kind="partition_replace", fence_deduplicates=True, requests=(), effects=effects,
        snapshots=(Snapshot(1, states, 0, 0), Snapshot(0, states, 0, 0)),
        runs=(Run(1, RunKind.FIRST, 0, False, 1.0, 2.0),),
        fault=FaultEvidence("proxy", True, "the proxy rule fired 1 time(s)", "2026-03-02"))


def _report(effects: tuple[Effect, ...]) -> RowReport:
    row = next(row for row in bundled_rows() if row.row_id == "sync.cut.after_commit")
    history = _history(effects)
    checks = (*check_all(history), exercised(history))
    verdict, reasons = certified_verdict(checks, history.ending(), row.expect)
    return RowReport(row, SinkRowResult("toy", "certified", verdict, None, (0,), history.digest(), 1.0, reasons,
                                        history, history.ending(), checks))


def test_a_day_applied_twice_reads_as_the_duplicates_checker_says() -> None:
    report = _report((Effect(1, "measurements", DAYS[:2], "f1", 4), Effect(2, "measurements", DAYS[1:2], None, 2)))

    assert report.verdict == FAIL and not report.passed
    assert report.effects_per_day() == {"2026-03-01": 1, "2026-03-02": 2, "2026-03-03": 0}
    assert report.check("duplicates").status == "invalid"
    assert report.check("exercise").status == "valid"
    text = report.describe()
    assert text.splitlines()[0] == "sync.cut.after_commit [toy]: FAIL"
    assert "  duplicates: effect 2 re-applied 2026-03-02" in text
    assert "  fault: proxy fired (the proxy rule fired 1 time(s), day 2026-03-02)" in text
    assert "  ending: first_run (the row accepts first_run, recovery)" in text
    assert "  runs: first exited 0" in text
    assert f"  history: {report.result.history_digest}" in text


def test_one_effect_per_day_passes_and_an_unknown_checker_is_named() -> None:
    report = _report((Effect(1, "measurements", DAYS, "f1", 6),))

    assert report.passed
    assert set(report.effects_per_day().values()) == {1}
    with pytest.raises(LookupError, match=r"no checker 'duplicate' in this result \(checkers: evidence, "):
        report.check("duplicate")


def test_a_row_that_does_not_apply_has_no_history_to_read() -> None:
    row = bundled_rows()[0]
    report = RowReport(row, SinkRowResult("toy", "certified", NOT_APPLICABLE, None, (), None, 0.0,
                                          ("the sink has no failpoints",)))

    with pytest.raises(LookupError, match=r"no history \(N/A: the sink has no failpoints\)"):
        _ = report.history
    with pytest.raises(LookupError, match="none: the row did not run"):
        report.check("duplicates")
    assert report.describe() == f"{row.row_id} [toy]: N/A\n  the sink has no failpoints"


def test_personalities_by_name_or_file(tmp_path: Path) -> None:
    own = tmp_path / "vendor.yaml"
    own.write_text("name: vendor\n")

    assert "json-batches" in bundled_personalities() and "stripe-like" in bundled_personalities()
    assert personality_file("stripe-like").name == "stripe-like.yaml"
    assert personality_file(own) == own.resolve()
    assert personality_file(str(own)) == own.resolve()
    with pytest.raises(ValueError, match=r"no receiver personality 'stripe': name a bundled one \(aip-155"):
        personality_file("stripe")
    with pytest.raises(ValueError, match="no receiver personality"):
        personality_file(tmp_path)  # a directory is no behaviour file


def test_host_port_of_a_url() -> None:
    assert host_port("http://127.0.0.1:41233") == "127.0.0.1:41233"
    assert host_port("http://127.0.0.1:41233/mock/v1") == "127.0.0.1:41233"
    with pytest.raises(ValueError, match="names no host and port"):
        host_port("http://127.0.0.1")


@pytest.fixture
def tcp() -> Iterator[TcpProxy]:
    import httpx

    with start_toxiproxy("builtin", in_thread=True) as handle, httpx.Client(timeout=10.0) as client:
        yield TcpProxy(handle.api_url, handle.kind, client)


def _echo_server() -> socket.socket:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)
    return server


def test_the_tcp_client_creates_arms_and_resets(tcp: TcpProxy) -> None:
    with _echo_server() as upstream:
        upstream_address = f"127.0.0.1:{upstream.getsockname()[1]}"
        listen = tcp.create("up", "http://" + upstream_address)
        host, port = listen.rsplit(":", 1)

        assert host == "127.0.0.1" and int(port) > 0
        assert tcp.url("up") == f"http://{listen}"
        assert tcp.add_toxic("up", "latency", {"latency": 5}) == "latency_downstream"
        assert tcp.add_toxic("up", "limit_data", {"bytes": 3}, stream="upstream", name="cap") == "cap"
        tcp.remove_toxic("up", "cap")
        tcp.set_enabled("up", False)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, int(port)), timeout=5).close()
        tcp.reset()  # enabled again, toxics gone
        socket.create_connection((host, int(port)), timeout=5).close()
        assert tcp.client.get(f"{tcp.api_url}/proxies/up/toxics").json() == []
        with pytest.raises(ServiceUnavailable, match=r"refused POST /proxies: 409 \(proxy already exists\)"):
            tcp.create("up", upstream_address)


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


def test_the_reaper_ends_what_was_started_under_its_mark_and_only_that() -> None:
    reaper = Reaper()
    before = os.environ.get(MARKER_ENV)
    with reaper.marked():
        assert os.environ[MARKER_ENV] == reaper.token
        marked = _sleeper()
    assert os.environ.get(MARKER_ENV) == before
    unmarked = _sleeper()
    try:
        assert f"{reaper.marker}".encode() in Path(f"/proc/{marked.pid}/environ").read_bytes().split(b"\0")
        reaper.close()  # as at the end of the pytest process: the watchdog sees the end of its pipe

        assert wait_until(lambda: marked.poll() is not None, 30.0)
        assert marked.returncode == -signal.SIGTERM
        assert unmarked.poll() is None  # not restproof's: left alone
    finally:
        for process in (marked, unmarked):
            if process.poll() is None:
                process.kill()
            process.wait()
