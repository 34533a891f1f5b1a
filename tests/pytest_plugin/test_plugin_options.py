"""The row options: what they collect, and how they refuse bad input (pytest's usage error, exit 4,
one line naming the problem, nothing run). Collection only: no part is started here, but every test
starts a pytest process of its own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from plugin_runs import PLUGIN_TEST_LIMIT_S, environment, pytest_command

from certification.scenarios import bundled_rows

pytestmark = [pytest.mark.slow, pytest.mark.timeout(PLUGIN_TEST_LIMIT_S)]
REFERENCE = Path(__file__).resolve().parents[2] / "scenarios" / "sinks" / "reference.yaml"
ROW_NODE = "restproof[{sink}]::{row}"


def _pytest(repository: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(pytest_command(*args), cwd=repository, env=environment(repository), capture_output=True,
                          text=True, timeout=300, check=False)


def _collected(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("restproof[")]


def test_every_row_of_the_bundled_catalogs_is_an_item_named_by_its_row_id(example: Path) -> None:
    done = _pytest(example, "--co", "-q", "-m", "restproof_row", "--restproof-sink", "sinks/toy-sink.yaml",
                   "--restproof-sink", str(REFERENCE))

    assert done.returncode == 0, done.stdout + done.stderr
    rows = bundled_rows()
    crash_points = [row for row in rows if row.fault.type == "failpoint"]
    assert crash_points  # the bundled catalogs expand crash points: the toy sink has none
    expected = [ROW_NODE.format(sink="toy-sink", row=row.row_id) for row in rows if row.fault.type != "failpoint"]
    expected += [ROW_NODE.format(sink="reference", row=row.row_id) for row in rows]
    assert _collected(done.stdout) == expected


def test_the_header_says_which_rows_a_sink_without_failpoints_leaves_out(example: Path) -> None:
    done = _pytest(example, "--co", "--restproof-sink", "sinks/toy-sink.yaml", "--restproof-seed", "7")

    crash_points = sum(row.fault.type == "failpoint" for row in bundled_rows())
    kept = len(bundled_rows()) - crash_points
    assert (f"restproof: sink toy-sink: {kept} rows (seed 7); {crash_points} crash-point rows left out: "
            "it does not honour RESTPROOF_FAILPOINT") in done.stdout


def test_rows_are_chosen_by_pattern_and_by_keyword(example: Path) -> None:
    by_pattern = _pytest(example, "--co", "-q", "-m", "restproof_row", "--restproof-sink", "sinks/toy-sink.yaml",
                         "--restproof-row", "sync.cut.*", "--restproof-row", "async.none")
    by_keyword = _pytest(example, "--co", "-q", "--restproof-sink", "sinks/toy-sink.yaml", "-k", "after_commit")

    assert _collected(by_pattern.stdout) == [ROW_NODE.format(sink="toy-sink", row=row) for row in (  # catalog order
        "async.none", "sync.cut.connect", "sync.cut.request_headers", "sync.cut.request", "sync.cut.after_commit")]
    assert set(_collected(by_keyword.stdout)) >= {ROW_NODE.format(sink="toy-sink", row="sync.cut.after_commit"),
                                                 ROW_NODE.format(sink="toy-sink", row="sync.kill.after_commit")}
    assert all("after_commit" in node for node in _collected(by_keyword.stdout))


def test_a_catalog_of_ones_own_replaces_the_bundled_ones(example: Path) -> None:
    source = Path(__file__).resolve().parents[2] / "scenarios" / "matrix" / "sync-json-batches.yaml"
    text = source.read_text().replace("../workloads/", str(source.parents[1] / "workloads") + "/")
    text = text.replace("../receivers/", str(source.parents[1] / "receivers") + "/")
    text = text.split("\n  - id: cut.connect")[0] + "\n"  # the first row alone
    (example / "mine.yaml").write_text(text)

    done = _pytest(example, "--co", "-q", "--restproof-sink", "sinks/toy-sink.yaml", "--restproof-catalog", "mine.yaml")

    assert _collected(done.stdout) == [ROW_NODE.format(sink="toy-sink", row="sync.none")], done.stdout + done.stderr


@pytest.mark.parametrize(("arguments", "message"), [
    (["--restproof-sink", "missing.yaml"], "restproof: missing.yaml"),
    (["--restproof-sink", "sinks/no-role.yaml"], "not a sink file (role: Field required)"),
    (["--restproof-sink", "sinks/toy-sink.yaml", "--restproof-sink", "sinks/toy-sink.yaml"],
     "two --restproof-sink files name the same sink"),
    (["--restproof-sink", "sinks/toy-sink.yaml", "--restproof-row", "sync.no-such-row"],
     "--restproof-row 'sync.no-such-row' matches no row of the catalogs"),
    (["--restproof-sink", "sinks/toy-sink.yaml", "--restproof-catalog", "sinks/toy-sink.yaml"],
     "not a scenario catalog"),
    (["--restproof-run-timeout", "0"], "--restproof-run-timeout must be above 0"),
])
def test_bad_input_is_a_usage_error_naming_the_problem(example: Path, arguments: list[str], message: str) -> None:
    (example / "sinks" / "no-role.yaml").write_text(
        (example / "sinks" / "toy-sink.yaml").read_text().replace("role: certified\n", ""))

    done = _pytest(example, "--co", "-q", *arguments)

    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "ERROR: restproof:" in done.stderr and message in done.stderr, done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_the_plugin_comes_from_the_entry_point(example: Path) -> None:
    """Without it the option is unknown; with `-p` as well it is the same plugin, registered once."""
    blocked = _pytest(example, "--co", "-q", "-p", "no:certification.pytest_plugin", "--restproof-sink", "x.yaml")
    both = _pytest(example, "--co", "-q", "-p", "certification.pytest_plugin", "-m", "restproof_row",
                   "--restproof-sink", "sinks/toy-sink.yaml", "--restproof-row", "sync.none")

    assert blocked.returncode == pytest.ExitCode.USAGE_ERROR
    assert "unrecognized arguments: --restproof-sink" in blocked.stderr
    assert both.returncode == 0, both.stderr
    assert _collected(both.stdout) == [ROW_NODE.format(sink="toy-sink", row="sync.none")]
