"""``certify run --journal``: which journal the sink under test uses, parsed and passed on without
starting anything (the live runs are in test_cert_pg_journal_run.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import certification.journal_backend as journal_backend
from certification.cli import app
from certification.journal_backend import JournalChoiceError, parse_journal_choice
from certification.sinks import SinkFileError, bundled_sinks, load_sink, render
from sink.journal.postgres.cluster import ClusterUnavailable

SENTINEL = "s3ntinel-Passw0rd"


@pytest.mark.parametrize(("value", "kind", "backend", "provided_by"), [
    ("sqlite", "sqlite", "sqlite", "embedded"),
    ("postgres", "postgres", "postgresql", "throwaway_cluster"),
    (f"postgresql://certify:{SENTINEL}@db.example:5433/journal", "dsn", "postgresql", "given_dsn"),
    ("postgres://certify@127.0.0.1/journal", "dsn", "postgresql", "given_dsn"),
])
def test_each_journal_choice_names_its_backend_and_provider_never_the_dsn(
        value: str, kind: str, backend: str, provided_by: str) -> None:
    choice = parse_journal_choice(value)
    assert choice.kind == kind
    assert choice.facts() == {"backend": backend, "provided_by": provided_by}
    assert SENTINEL not in repr(choice)


@pytest.mark.parametrize("value", ["", "SQLite", "postgresql", "sqlite:/tmp/j.sqlite3", f"mysql://u:{SENTINEL}@h/db",
                                   f"postgresql://u:{SENTINEL}@/db", "postgresql:///journal"])
def test_an_unknown_journal_is_refused_without_repeating_the_value(value: str) -> None:
    with pytest.raises(JournalChoiceError) as refused:
        parse_journal_choice(value)
    assert SENTINEL not in str(refused.value)


def test_journal_args_expand_to_whole_arguments_and_to_nothing_by_default() -> None:
    template = ("delivery", "run", "--state-dir", "{state_dir}", "{journal_args}", "--format", "json")
    values = {"state_dir": "/s"}
    assert render(template, values) == ("delivery", "run", "--state-dir", "/s", "--format", "json")
    assert render(template, values, {"journal_args": ("--journal", "postgresql://h/db1")}) == (
        "delivery", "run", "--state-dir", "/s", "--journal", "postgresql://h/db1", "--format", "json")


def test_journal_args_inside_a_larger_argument_is_an_invalid_sink_file(tmp_path: Path) -> None:
    sink = tmp_path / "glued.yaml"
    sink.write_text('schema_id: restproof.sink_under_test.v2\nname: glued\nrole: certified\ndescription: x\n'
                    'run: ["delivery", "--x={journal_args}"]\n')
    with pytest.raises(SinkFileError, match="whole argument"):
        load_sink(sink)


def test_the_reference_sink_takes_the_journal_in_every_command_and_the_baselines_take_none() -> None:
    sinks = bundled_sinks()
    reference = sinks["reference"]
    assert reference.uses_journal()
    for command in (reference.run, reference.recover, reference.operator):
        assert command is not None and "{journal_args}" in command
    baselines = [spec for spec in sinks.values() if spec.role == "baseline"]
    assert baselines and not any(spec.uses_journal() for spec in baselines)


def _run(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["run", "--only", "sync.none", "--out", str(tmp_path / "out"), *args])
    return result.exit_code, result.output


def test_an_unknown_journal_is_exit_2_before_anything_runs(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "--journal", f"mysql://u:{SENTINEL}@127.0.0.1/db")
    assert code == 2, output
    assert "error[certify.invalid_input]" in output and SENTINEL not in output
    assert not (tmp_path / "out").exists()


def test_missing_server_binaries_are_a_clear_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Path:
        raise ClusterUnavailable("PostgreSQL server binaries (pg_ctl, initdb) not found; install `postgresql`")

    monkeypatch.setattr(journal_backend, "find_server_binaries", missing)
    code, output = _run(tmp_path, "--journal", "postgres")
    assert code == 2, output
    assert "error[certify.journal_unavailable]" in output and "install `postgresql`" in output
    assert not (tmp_path / "out" / "test_artifacts").exists()


def test_an_unreachable_server_is_exit_3_and_never_shows_the_password(tmp_path: Path) -> None:
    # Port 1 on the loopback refuses at once: the probe fails before any row or service starts.
    code, output = _run(tmp_path, "--journal", f"postgresql://certify:{SENTINEL}@127.0.0.1:1/journal")
    assert code == 3, output
    assert "error[certify.journal_unavailable]" in output
    assert SENTINEL not in output and "Traceback" not in output
    assert not (tmp_path / "out" / "test_artifacts").exists()


@pytest.mark.parametrize("journal", ["sqlite", f"postgresql://certify:{SENTINEL}@127.0.0.1:1/journal"])
def test_a_journal_server_row_named_on_a_run_without_a_throwaway_server_is_exit_2(tmp_path: Path,
                                                                                  journal: str) -> None:
    # SQLite has no server, and a server the caller gave is never killed.
    row = "sync.journal_kill.sigkill.journal.reserve_submitting.after"
    result = CliRunner().invoke(app, ["run", "--only", row, "--journal", journal, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())  # the console wraps long lines
    assert f"row {row} kills the journal server: run it with --journal postgres" in said
    assert SENTINEL not in said
    assert not (tmp_path / "out").exists()


def test_journal_server_rows_are_left_out_of_other_runs_with_a_note() -> None:
    from certification.cli import _rows_for_journal
    from certification.scenarios import SERVER_FAULTS, bundled_rows

    rows = bundled_rows()
    server_rows = [row for row in rows if row.fault.type in SERVER_FAULTS]
    assert len(server_rows) >= 32
    kept = _rows_for_journal(rows, parse_journal_choice("sqlite"), named=False)
    assert len(kept) == len(rows) - len(server_rows) and not any(row.fault.type in SERVER_FAULTS for row in kept)
    assert _rows_for_journal(rows, parse_journal_choice("postgres"), named=True) == rows
