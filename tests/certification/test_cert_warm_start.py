"""Warm starts: a sink's run forked from a server that imported it once must be, to the harness and
to the sink, the process a fresh interpreter would have been (certification.warm_start)."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from certification.procfs import process_state
from certification.services import ServiceUnavailable
from certification.sinks import Invocation, Launched, bundled_sinks, default_values, render
from certification.warm_start import WarmEntry, WarmProcess, WarmServers, applies

PROBE = textwrap.dedent("""
    import json, os, sys, time

    def main():
        command = sys.argv[1]
        if command == "show":
            print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "probe": os.environ.get("PROBE"),
                              "server_only": os.environ.get("SERVER_ONLY"), "stdin": sys.stdin.read(),
                              "fds": sorted(os.listdir("/proc/self/fd")), "pid": os.getpid()}))
        elif command == "exit":
            raise SystemExit(int(sys.argv[2]))
        elif command == "return":
            return sys.argv[2]
        elif command == "raise":
            raise ValueError("a sentinel the harness never needs")
        elif command == "burn":
            end = time.process_time() + 0.3
            while time.process_time() < end:
                pass
        elif command == "sleep":
            time.sleep(30)
        elif command == "touch":
            open(sys.argv[2], "w").close()
""")


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WarmServers]:
    (tmp_path / "warmprobe.py").write_text(PROBE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the server's own import path (it inherits ours)
    monkeypatch.setenv("SERVER_ONLY", "set where the server started")
    started = WarmServers()
    yield started
    started.close()


def _spawn(servers: WarmServers, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> WarmProcess:
    server = servers.server(WarmEntry("warmprobe:main", ("json",)))
    assert server is not None
    (tmp_path / "run").mkdir(exist_ok=True)
    return WarmProcess(server, ("probe", *args), tmp_path / "run", env or {"PROBE": "this run's"},
                       tmp_path / "go")


def _finish(process: WarmProcess, timeout: float = 30) -> tuple[int, float, bytes]:
    deadline = time.monotonic() + timeout
    while not process.exited():
        assert time.monotonic() < deadline, "the forked run did not exit"
        time.sleep(0.01)
    code, cpu = process.reap()
    return code, cpu, process.stdout.read()


def test_a_forked_run_has_its_own_argv_directory_environment_and_streams(servers: WarmServers,
                                                                          tmp_path: Path) -> None:
    process = _spawn(servers, tmp_path, "show")
    (tmp_path / "go").touch()
    code, _, out = _finish(process)
    shown = json.loads(out)
    assert code == 0
    assert shown["argv"] == ["probe", "show"]
    assert shown["cwd"] == str(tmp_path / "run")
    assert (shown["probe"], shown["server_only"]) == ("this run's", None)  # the run's environment only
    assert shown["stdin"] == ""
    assert set(shown["fds"]) <= {"0", "1", "2", "3"}  # 3: the listing itself; nothing of the server's
    assert shown["pid"] == process.pid


def test_a_forked_run_waits_for_the_go_signal(servers: WarmServers, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    process = _spawn(servers, tmp_path, "touch", str(marker))
    time.sleep(0.3)
    assert not process.exited() and not marker.exists()
    (tmp_path / "go").touch()
    assert _finish(process)[0] == 0
    assert marker.exists()


@pytest.mark.parametrize(("args", "code"), [
    (("exit", "7"), 7), (("exit", "300"), 44), (("return", "a message"), 1), (("raise",), 1), (("burn",), 0),
])
def test_exit_codes_are_those_of_a_fresh_interpreter(servers: WarmServers, tmp_path: Path,
                                                     args: tuple[str, ...], code: int) -> None:
    process = _spawn(servers, tmp_path, *args)
    (tmp_path / "go").touch()
    assert _finish(process)[0] == code


def test_a_forked_run_reports_its_own_cpu(servers: WarmServers, tmp_path: Path) -> None:
    process = _spawn(servers, tmp_path, "burn")
    (tmp_path / "go").touch()
    assert 0.3 <= _finish(process)[1] < 5.0


def test_a_kill_or_a_stop_by_pid_reaches_the_forked_run(servers: WarmServers, tmp_path: Path) -> None:
    process = _spawn(servers, tmp_path, "sleep")
    (tmp_path / "go").touch()
    os.kill(process.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while process_state(process.pid) != "T":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not process.exited()
    process.kill()
    assert _finish(process)[0] == -signal.SIGKILL


def test_an_entry_the_server_cannot_import_leaves_its_runs_cold(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    servers = WarmServers()
    try:
        assert servers.server(WarmEntry("no_such_module_here:main", ())) is None
        assert servers.server(WarmEntry("no_such_module_here:main", ())) is None  # not tried again
    finally:
        servers.close()
    assert "ModuleNotFoundError importing no_such_module_here:main" in capsys.readouterr().err


def test_the_server_exits_when_the_harness_closes_it(servers: WarmServers) -> None:
    server = servers.server(WarmEntry("warmprobe:main", ()))
    assert server is not None
    servers.close()
    assert server.process.wait(timeout=10) == 0


def test_a_server_gone_under_a_run_is_a_harness_outage(servers: WarmServers, tmp_path: Path) -> None:
    process = _spawn(servers, tmp_path, "sleep")
    server = servers.server(WarmEntry("warmprobe:main", ("json",)))
    assert server is not None
    server.process.kill()
    server.process.wait()
    process.kill()
    with pytest.raises(ServiceUnavailable, match="warm server"):
        _finish(process)


def test_only_this_pythons_console_script_of_that_entry_starts_warm() -> None:
    delivery = default_values()["delivery"]
    entry = WarmEntry("sink.cli:script", ())
    assert applies(entry, (delivery, "run"))
    assert not applies(entry, ("ip", "netns", "exec", "host2", delivery, "run"))  # a prefix: cold
    assert not applies(entry, (sys.executable, "-m", "sink.cli", "run"))
    assert not applies(entry, ("/elsewhere/bin/delivery", "run"))
    assert not applies(WarmEntry("sink.cli:other", ()), (delivery, "run"))  # not that script's entry


def test_the_bundled_reference_sinks_runs_start_warm() -> None:
    # Its warm entry must be the `delivery` console script's own entry point, or every run of the
    # matrix silently starts cold (about 0.5 s of CPU more per process).
    spec = bundled_sinks()["reference"]
    assert spec.warm_start is not None
    run = render(spec.run, default_values())
    assert applies(spec.warm_start.entry_of(), run), (spec.warm_start.entry, run[:2])


@pytest.mark.parametrize("args", [
    ("resume", "--operation-id", "op-missing", "--format", "json"),  # a missing journal: exit 2, a JSON error
    ("check-design-contract", "--format", "json"),
    ("run", "--format", "json"),  # a usage error
])
def test_the_reference_sink_answers_the_same_warm_and_cold(tmp_path: Path, args: tuple[str, ...]) -> None:
    spec = bundled_sinks()["reference"]
    assert spec.warm_start is not None
    answers = []
    for warm in (spec.warm_start.entry_of(), None):
        state = tmp_path / f"state-{warm is not None}"
        argv = (default_values()["delivery"], *args, *(("--state-dir", str(state)) if args[0] == "resume" else ()))
        launched = Launched(Invocation(argv, tmp_path / "cwd", dict(os.environ), warm))
        assert launched.warm is (warm is not None)
        finished = launched.go_and_wait(120)
        assert finished.warm is (warm is not None)
        answers.append((finished.exit_code, finished.stdout.replace(str(state), "STATE")))
    assert answers[0] == answers[1]


@pytest.mark.slow
@pytest.mark.parametrize(("flags", "warm"), [((), True), (("--cold-start",), False)])
def test_a_kill_row_passes_with_the_reference_forked_warm_and_cold(tmp_path: Path, flags: tuple[str, ...],
                                                                   warm: bool) -> None:
    import subprocess

    certify = str(Path(sys.executable).with_name("certify"))
    done = subprocess.run([certify, "run", "--quick", "--only", "sync.kill.after_commit", "--identity-examples", "0",
                           *flags, "--out", str(tmp_path / "out"), "--json"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["verdict"] == "PASS"
    started = summary["time_spent"]["sink_processes"]
    assert started["reference"]["processes"] >= 2  # the killed worker and its recovery
    assert started["reference"]["warm"] == (started["reference"]["processes"] if warm else 0)
    assert started["naive-retry"]["warm"] == 0  # a sink without warm_start always starts cold
