"""The catalogs of the bundled receiver personalities beyond json-batches (stripe-like, bare-409,
fingerprint-ledger): each loads, names its own personality's profile, keeps its row ids apart from
every other bundled catalog's, and one live row per personality is judged as the catalog says.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from certification.documents import load_yaml
from certification.scenarios import BUNDLED, CatalogError, bundled_rows, load_catalog, load_catalogs

CERTIFY = str(Path(sys.executable).with_name("certify"))
MATRIX = Path("test_artifacts") / "connectors" / "rest" / "remote_effect_fault_matrix.json"
PERSONALITIES = {"stripe-like": "stripe", "bare-409": "bare409", "fingerprint-ledger": "fingerprint"}
"""Personality -> the prefix of its catalog's row ids."""
LIVE_ROWS = {
    "sync.stripe.kill.after_commit": ("PASS", {"naive-retry": "CAUGHT", "naive-idempotency-key": "CAUGHT"}),
    "sync.bare409.status.409.bare": ("PASS", {}),
    "sync.fingerprint.kill.after_commit": ("PASS", {"naive-idempotency-key": "CAUGHT"}),
}
"""One live row per personality: the certified sink's verdict and the baselines that must be caught."""


def _catalog(personality: str) -> Path:
    return BUNDLED / f"sync-{personality}.yaml"


@pytest.mark.parametrize("personality", sorted(PERSONALITIES))
def test_a_personality_catalog_loads_on_its_own_receiver_and_profile(personality: str) -> None:
    rows = load_catalog(_catalog(personality))
    assert len(rows) >= 5
    assert {row.contract.name for row in rows if row.contract is not None} == {personality}
    assert all(row.family == "sync_batch" for row in rows)
    assert all(row.row_id.startswith(f"sync.{PERSONALITIES[personality]}.") for row in rows)
    workload = load_yaml(rows[0].workload)
    assert workload["sink"]["operation_profile_ref"] == f"mock.{personality}@1"
    assert (BUNDLED.parent / "profiles" / f"mock.{personality}@1.yaml").is_file()
    ends = {tuple(row.expect.end) for row in rows}
    assert ("first_run",) in ends  # the row without a fault completes on the first run
    for row in rows:
        if {"operator", "blocked"} & set(row.expect.end):
            assert row.expect.why, row.row_id


def test_personality_row_ids_are_unique_across_every_bundled_catalog() -> None:
    every = bundled_rows()  # refuses a row id found in two catalogs
    ids = [row.row_id for row in every]
    assert len(ids) == len(set(ids))
    for personality in PERSONALITIES:
        assert {row.row_id for row in load_catalog(_catalog(personality))} <= set(ids)


def test_a_catalog_repeating_a_personality_row_id_is_refused(tmp_path: Path) -> None:
    source = _catalog("stripe-like")
    copy = tmp_path / "matrix" / source.name
    copy.parent.mkdir()
    text = source.read_text().replace("../workloads/", f"{BUNDLED.parent}/workloads/").replace(
        "../receivers/", f"{BUNDLED.parent}/receivers/")
    copy.write_text(text)
    with pytest.raises(CatalogError, match=r"sync\.stripe\.none"):
        load_catalogs([source, copy])


@pytest.fixture(scope="module")
def live_matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("personalities")
    only = [argument for row in LIVE_ROWS for argument in ("--only", row)]
    done = subprocess.run([CERTIFY, "run", *only, "--parallel", "2", "--out", str(out), "--json"],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    rows: list[dict[str, Any]] = json.loads((out / MATRIX).read_bytes())["rows"]
    return {row["row_id"]: row for row in rows}


@pytest.mark.slow
@pytest.mark.parametrize("row_id", sorted(LIVE_ROWS))
def test_one_live_row_per_personality_passes_the_reference_and_catches_the_baselines(
        live_matrix: dict[str, dict[str, Any]], row_id: str) -> None:
    verdict, caught = LIVE_ROWS[row_id]
    row = live_matrix[row_id]
    reference = row["sinks"]["reference"]
    assert reference["verdict"] == verdict, reference["reasons"]
    assert reference["fault_fired"] is True
    assert reference["ending"] in row["expect"]["end"]
    assert all(value == 0 for value in reference["counters"].values()), reference["counters"]
    assert sorted(row["caught_duplicating_expected"]) == sorted(caught)
    for baseline, expected in caught.items():
        assert row["sinks"][baseline]["verdict"] == expected, row["sinks"][baseline]["reasons"]
        assert row["sinks"][baseline]["counters"]["duplicates"] > 0
