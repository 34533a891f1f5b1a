"""The ``delivery`` CLI imports the sink only inside the command that runs (start-up cost).

Each process the certification matrix starts pays what ``import sink.cli`` imports before Typer
parses the command line; the sink (pydantic models, compiler, runtime, journal, httpx, jsonschema)
belongs to the commands that use it. The behaviour of the commands is covered by their own tests;
these check that loading the CLI stays light and that a command still finds what it imports.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = {"pydantic", "httpx", "httpcore", "jsonschema", "yaml", "psycopg", "sink.contracts", "sink.compiler",
         "sink.runtime", "sink.journal", "sink.design", "sink.transport", "sink.artifacts", "sink.preparation"}


def _modules_after(code: str) -> set[str]:
    probe = f"import sys; {code}; print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True,
                          cwd=REPO)
    return set(done.stdout.split())


def _delivery(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sink.cli", *args], capture_output=True, text=True, timeout=180,
                          cwd=REPO, check=False)


def test_loading_the_cli_imports_no_sink_layer_and_no_heavy_dependency() -> None:
    loaded = _modules_after("import sink.cli; sink.cli.app")
    assert not HEAVY & loaded
    assert {"sink.cli.runtime_commands", "sink.cli.operator_commands", "typer"} <= loaded


def test_the_sink_never_loads_httpx_command_line_client() -> None:
    # httpx's package imports its CLI (click, rich, pygments) unless it cannot: a sink process that
    # delivers needs httpx itself, never that client.
    loaded = _modules_after("import sink.cli, sink.runtime.composition, httpx; httpx.Client().close()")
    assert "httpx" in loaded and "sink.transport.httpx_transport" in loaded
    assert not {"rich", "pygments", "click"} & loaded


def test_building_the_command_tree_imports_no_sink_layer() -> None:
    # Typer resolves every command's annotations when it builds the click command: the option types
    # must not pull the sink in either.
    loaded = _modules_after("import typer.main, sink.cli; typer.main.get_command(sink.cli.app)")
    assert not HEAVY & loaded


def test_help_lists_every_command_without_the_sink() -> None:
    done = _delivery("--help")
    assert done.returncode == 0, done.stderr
    for command in ("run", "resume", "inspect", "bundle", "reconcile", "abandon", "transfer-capacity",
                    "retire-marker", "attest-epoch", "check", "plan", "schema", "check-design-contract", "preview",
                    "gc"):
        assert f" {command} " in done.stdout, command


def test_a_usage_error_keeps_its_exit_code_and_json_error() -> None:
    done = _delivery("run", "--format", "json")  # the workload argument is missing
    assert done.returncode == 2
    document = json.loads(done.stdout)
    assert document["ok"] is False and document["exit_code"] == 2
    assert document["errors"][0]["code"] == "cli.usage"
    assert "Traceback" not in done.stderr


def test_commands_import_what_they_use_on_their_failure_paths(tmp_path: Path) -> None:
    # Each failure path reaches names the module no longer imports at load time: a missed lazy import
    # would surface as an internal error (exit 1), never as these stable codes.
    bad_scope = _delivery("run", "scenarios/workloads/measurements-sync.yaml", "--scope-from", "2026-03-05",
                          "--scope-to", "2026-03-01", "--bindings-dir", "scenarios/bindings",
                          "--state-dir", str(tmp_path / "state"), "--format", "json")
    assert bad_scope.returncode == 2, bad_scope.stderr
    assert json.loads(bad_scope.stdout)["errors"][0]["code"] == "cli.invalid_scope"

    no_journal = _delivery("inspect", "--operation-id", "op_missing", "--state-dir", str(tmp_path / "state"),
                           "--format", "json")  # through guarded(): its exception classes are imported there
    assert no_journal.returncode == 2, no_journal.stderr
    assert json.loads(no_journal.stdout)["errors"][0]["code"] == "journal.not_a_journal"

    not_a_store = _delivery("gc", "--dry-run", "--artifacts-dir", str(tmp_path), "--format", "json")
    assert not_a_store.returncode == 2, not_a_store.stderr
    assert json.loads(not_a_store.stdout)["errors"][0]["code"] == "cli.invalid_argument"

    schema = _delivery("schema", "plan")
    assert schema.returncode == 0, schema.stderr
    assert json.loads(schema.stdout)["type"] == "object"


def test_an_empty_interval_runs_to_a_skipped_result(tmp_path: Path) -> None:
    done = _delivery("run", "scenarios/workloads/measurements-sync.yaml", "--scope-from", "2030-01-01",
                     "--scope-to", "2030-01-03", "--bindings-dir", "scenarios/bindings",
                     "--state-dir", str(tmp_path / "state"), "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert (document["outcome"], document["reason"]) == ("skipped", "empty_interval")


def test_command_groups_name_the_module_that_registers_each_command() -> None:
    # A process naming a command in COMMAND_GROUPS builds only that module's commands: a command
    # moved to another module without this table would then be "no such command".
    import sink.cli  # the lazy attribute below registers every command

    by_module: dict[str, set[str]] = {}
    for info in sink.cli.app.registered_commands:
        assert info.callback is not None
        name = info.name or info.callback.__name__.replace("_", "-")
        by_module.setdefault(info.callback.__module__.rsplit(".", 1)[-1], set()).add(name)
    assert set(by_module) == set(sink.cli.COMMAND_MODULES)
    for command, module in sink.cli.COMMAND_GROUPS.items():
        assert command in by_module[module], command
    for module in set(sink.cli.COMMAND_GROUPS.values()):
        assert len(by_module[module]) > 1, module  # a lone command would become the whole program
        assert by_module[module] <= set(sink.cli.COMMAND_GROUPS), module


def test_a_command_loads_only_its_own_command_module_and_no_http2(tmp_path: Path) -> None:
    # `resume` on an empty state directory: the command imports the runtime (transport, httpcore)
    # and fails on the missing journal; it must not have loaded the other command modules, h2
    # (blocked: HTTP/1.1 only) or httpx (the transport speaks to httpcore).
    argv = ["resume", "--operation-id", "x", "--state-dir", str(tmp_path), "--format", "json"]
    probe = ("import sys, sink.cli\n"
             "try:\n"
             f"    sink.cli.main({argv!r})\n"
             "except SystemExit:\n    pass\n"
             "print('--modules--'); print('\\n'.join(sorted(n for n, m in sys.modules.items() if m is not None)))")
    loaded = _modules_after_script(probe)
    assert {"sink.cli.runtime_commands", "sink.runtime.service", "httpcore"} <= loaded
    assert not {"sink.cli.operator_commands", "sink.cli.plan_commands", "sink.cli.gc_command",
                "sink.cli.preview"} & loaded
    assert not {"h2", "httpx", "rich", "pygments", "click"} & loaded


def test_a_grouped_command_still_runs_and_refuses_like_the_full_program() -> None:
    done = _delivery("resume", "--help")
    assert done.returncode == 0, done.stderr
    assert "Usage: delivery resume [OPTIONS]" in done.stdout and "--operation-id" in done.stdout
    wrong = _delivery("resume", "--no-such-option", "--format", "json")
    full = _delivery("no-such-command", "--format", "json")
    assert wrong.returncode == full.returncode == 2
    assert json.loads(wrong.stdout)["errors"][0]["code"] == "cli.usage"


def _modules_after_script(script: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True,
                          cwd=REPO)
    return set(done.stdout.split("--modules--")[-1].split())  # after the command's own output
