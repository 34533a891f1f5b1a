"""The provider claims no untested Airflow minor: every minor of its declared range has a committed,
signed, passing compat result (certify airflow-matrix), and the extra pins the same range."""

from __future__ import annotations

import json
import re
from pathlib import Path

from certification.verify import verify_artifact
from sink.airflow.provider_info import SUPPORTED_AIRFLOW, SUPPORTED_MINORS

REPO = Path(__file__).resolve().parents[2]
COMPAT = REPO / "test_artifacts" / "airflow-compat"
KEY = COMPAT / "restproof-airflow-compat.pub"


def test_every_declared_minor_has_a_signed_passing_result() -> None:
    results: dict[str, str] = {}
    for path in sorted(p for p in COMPAT.glob("airflow-*.json") if re.fullmatch(r"airflow-[\d.]+\.json", p.name)):
        evidence = verify_artifact(path, KEY)
        document = json.loads(path.read_bytes())
        version = document["environment"]["airflow_version"]
        assert evidence.predicate["airflow_version"] == version
        assert path.name == f"airflow-{version}.json"
        results[".".join(version.split(".")[:2])] = document["verdict"]
    assert {minor: results.get(minor) for minor in SUPPORTED_MINORS} == dict.fromkeys(SUPPORTED_MINORS, "PASS")


def test_the_extra_declares_the_same_range() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^airflow = \["apache-airflow' + re.escape(SUPPORTED_AIRFLOW) + r'"\]$', pyproject, re.M)
    low = min(SUPPORTED_MINORS, key=lambda m: tuple(map(int, m.split("."))))
    assert SUPPORTED_AIRFLOW.startswith(f">={low},")
