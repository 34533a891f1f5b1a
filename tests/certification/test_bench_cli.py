"""``certify bench``: invalid input is exit 2 before anything starts; a sink that claims success
without delivering is a wrong result (exit 4) while the naive loop beside it, judged by the same
ledger, passes; the artifact is written and signed either way, and carries no secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from certification.bench import workspace
from certification.bench.artifact import artifact_path
from certification.cli import app
from certification.verify import verify_artifact

runner = CliRunner()


@pytest.mark.parametrize("argv", [
    ["throughput", "--rows", "0"],
    ["throughput", "--child-bytes", "19999"],
    ["throughput", "--child-bytes", "64000001"],
    ["rss", "--decoded-mb", "5"],
    ["throughput", "--sink", "no-such-sink.yaml"],
    ["throughput", "--sink", "V1_SINK"],
    ["adaptive", "--days", "5"],
    ["load", "--users", "0"],
])
def test_invalid_input_is_exit_2(tmp_path: Path, argv: list[str]) -> None:
    v1 = tmp_path / "v1.yaml"  # a sink file without an explicit role
    v1.write_text(json.dumps({"schema_id": "restproof.sink_under_test.v1", "name": "old", "description": "d",
                              "run": ["true"]}))
    argv = [str(v1) if arg == "V1_SINK" else arg for arg in argv]
    result = runner.invoke(app, ["bench", *argv, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "out").exists()


def test_existing_evidence_is_refused(tmp_path: Path) -> None:
    path = artifact_path(tmp_path, "adaptive_frontier")
    path.parent.mkdir(parents=True)
    path.write_text("{}")
    result = runner.invoke(app, ["bench", "adaptive", "--quick", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "never overwritten" in " ".join(result.output.split())


def test_a_sink_that_lies_is_a_wrong_result_beside_a_passing_baseline(tmp_path: Path) -> None:
    liar = tmp_path / "liar.yaml"
    liar.write_text(json.dumps({"schema_id": "restproof.sink_under_test.v2", "name": "liar", "role": "certified",
                                "description": "exits 0 and sends nothing", "run": ["{python}", "-c", "print(1)"]}))
    out = tmp_path / "out"
    result = runner.invoke(app, ["bench", "throughput", "--sink", str(liar), "--rows", "200", "--out", str(out)])
    assert result.exit_code == 4, result.output
    path = artifact_path(out, "throughput")
    verify_artifact(path, out / "keys" / "restproof-evidence.pub")
    data = path.read_bytes()
    document = json.loads(data)
    checks = document["checks"]
    assert not checks["200.sink.0"]["passed"] and "missing=1" in checks["200.sink.0"]["detail"]
    assert checks["200.naive-loop.0"]["passed"]
    assert document["verdict"] == "FAIL" and "200.sink.0" in result.output
    assert workspace.TOKEN.encode() not in data  # the bench's bearer token never reaches evidence


def test_the_reference_with_small_children_gets_its_cpu_split_and_profile(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["bench", "throughput", "--rows", "1200", "--child-bytes", "20000", "--rounds", "1",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads(artifact_path(out, "throughput").read_bytes())
    (rows, figures), = document["figures"]["by_rows"].items()
    assert figures["children"] >= 10
    checks = document["checks"]
    # the idle resume sent nothing again (each scope once), the idle loop sent nothing at all
    assert checks[f"{rows}.reference-idle.0"]["passed"] and "doubled=0" in checks[f"{rows}.reference-idle.0"]["detail"]
    assert checks[f"{rows}.naive-idle.0"]["detail"].startswith("exit 0; effects=0")
    assert figures["reference-delivery.per_child_cpu_ms"] > 0 and figures["naive-loop.fixed_cpu_s"] > 0
    assert checks[f"{rows}.profile"]["passed"]  # the profiled resume wrote its stats
    shares = {k.rsplit(".", 1)[1]: v for k, v in figures.items() if ".profile_share." in k}
    assert shares["journal"] > 0 and shares["transport"] > 0 and shares["startup"] > 0
