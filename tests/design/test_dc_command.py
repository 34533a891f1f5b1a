"""check_design_contract: exit codes, stable report shape, and no traceback for any bad input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dc_mutations import mutated

from sink.design.command import check_design_contract

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "design"


def _run(path: Path | None, fmt: str) -> tuple[int, str]:
    buffer = io.StringIO()
    code = check_design_contract(path, "json" if fmt == "json" else "text", stream=buffer)
    return code, buffer.getvalue()


def test_bundled_contract_passes_in_both_formats() -> None:
    code, text = _run(None, "text")
    assert code == 0 and "valid" in text and "INVALID" not in text
    code, raw = _run(None, "json")
    assert code == 0
    assert json.loads(raw) == {"contract": "restproof.rest-bulk-delivery-design.v1", "valid": True, "findings": []}


def test_semantic_failure_exits_2_with_sorted_findings(tmp_path: Path) -> None:
    target = tmp_path / "contract.yaml"
    target.write_text(yaml.safe_dump(mutated("running_forbidden"), sort_keys=False), encoding="utf-8")
    code, raw = _run(target, "json")
    report = json.loads(raw)
    assert code == 2 and report["valid"] is False
    assert set(report) == {"contract", "valid", "findings"}
    keys = [(f["rule"], f["location"], f["code"], f["message"]) for f in report["findings"]]
    assert keys == sorted(keys)
    assert "running_forbidden" in {f["rule"] for f in report["findings"]}
    code, text = _run(target, "text")
    assert code == 2 and "[running_forbidden]" in text


@pytest.mark.parametrize(
    ("name", "content", "code"),
    [
        ("bad.yaml", b"contract_id: \xc3\x28\n", "yaml.invalid_utf8"),
        ("huge.yaml", b"#" * 1_000_001, "yaml.too_large"),
        ("dup.yaml", b"a:\n  b: {c: 1, c: 2}\n", "yaml.duplicate_key"),
        ("list.yaml", b"- just a list\n", "schema.type"),
        ("empty.yaml", b"", "schema.type"),
    ],
)
def test_bad_inputs_exit_2(tmp_path: Path, name: str, content: bytes, code: str) -> None:
    target = tmp_path / name
    target.write_bytes(content)
    exit_code, raw = _run(target, "json")
    assert exit_code == 2
    assert code in {f["code"] for f in json.loads(raw)["findings"]}


def test_missing_file_and_directory_exit_2(tmp_path: Path) -> None:
    for target in (tmp_path / "absent.yaml", tmp_path):
        exit_code, raw = _run(target, "json")
        assert exit_code == 2
        assert [f["code"] for f in json.loads(raw)["findings"]] == ["yaml.unreadable"]


def _subprocess(path: str | None) -> subprocess.CompletedProcess[str]:
    argument = "None" if path is None else f"Path({path!r})"
    program = (
        "import sys; from pathlib import Path; from sink.design.command import check_design_contract; "
        f"sys.exit(check_design_contract({argument}, 'json'))"
    )
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.timeout(120)
def test_json_shape_through_a_real_process(tmp_path: Path) -> None:
    ok = _subprocess(None)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["valid"] is True
    bad = tmp_path / "bad.yaml"
    bad.write_bytes((FIXTURES / "invalid_utf8.yaml").read_bytes())
    failed = _subprocess(str(bad))
    assert failed.returncode == 2
    assert "Traceback" not in failed.stderr and "Traceback" not in failed.stdout
    assert json.loads(failed.stdout)["findings"][0]["code"] == "yaml.invalid_utf8"


def test_report_never_echoes_document_values(tmp_path: Path) -> None:
    sentinel = "tok_live_SENTINEL_93b1"
    doc = mutated("schema")
    doc["invariants"][0]["statement"] = sentinel
    doc["legal_tuples"][0]["execution_state"] = sentinel
    target = tmp_path / "c.yaml"
    target.write_text(yaml.safe_dump(doc), encoding="utf-8")
    exit_code, raw = _run(target, "json")
    assert exit_code == 2 and sentinel not in raw


def test_internal_validator_defect_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    import sink.design.command as command

    def explode(_: object) -> object:
        raise RuntimeError("secret-bearing detail")

    monkeypatch.setattr(command, "validate_document", explode)
    exit_code, raw = _run(None, "json")
    report = json.loads(raw)
    assert exit_code == 2 and report["valid"] is False
    assert report["findings"][0]["code"] == "design.internal_error"
    assert "secret-bearing" not in raw


def test_stand_alone_entry_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sink.design.command import main

    assert main([]) == 0
    assert "valid" in capsys.readouterr().out
    target = tmp_path / "dup.yaml"
    target.write_bytes(b"a: 1\na: 2\n")
    assert main([str(target), "--format", "json"]) == 2
    assert json.loads(capsys.readouterr().out)["findings"][0]["code"] == "yaml.duplicate_key"
    with pytest.raises(SystemExit) as caught:
        main(["--format", "xml"])
    assert caught.value.code == 2


DELIVERY = Path(sys.executable).with_name("delivery")


@pytest.mark.timeout(120)
@pytest.mark.skipif(not DELIVERY.exists(), reason="the delivery console script is not installed in this environment")
@pytest.mark.parametrize(
    ("argument", "exit_code", "code"),
    [(None, 0, None), ("invalid_utf8.yaml", 2, "yaml.invalid_utf8"), ("absent.yaml", 2, "yaml.unreadable")],
)
def test_delivery_cli_entry(argument: str | None, exit_code: int, code: str | None) -> None:
    command = [str(DELIVERY), "check-design-contract", "--format", "json"]
    if argument is not None:
        command.insert(2, str(FIXTURES / argument))
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == exit_code, result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert [f["code"] for f in report["findings"]] == ([] if code is None else [code])
