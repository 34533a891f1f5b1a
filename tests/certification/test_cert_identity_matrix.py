"""The identity conflict matrix: real compiler, sealer and admission over mutated input files; each
judgement rule fails its example when broken; nothing drawn (values, secrets) reaches a row."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from certification.gate import ARTIFACTS, gate, identity_problems
from certification.identity_matrix import CONFLICT, _ConnectCounter, _Identity, _judge, run_identity_matrix
from certification.identity_mutations import Mutation

BASE = _Identity(("dk1", "dk2"), ("mk1", "mk2"), ("in1", "in2"), "pol1")
SENTINEL = "zq9sentinel"


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return run_identity_matrix(tmp_path_factory.mktemp("identity"), examples=12, seed=3)


def test_every_mutation_class_meets_its_expectation(matrix: dict[str, object]) -> None:
    totals = matrix["totals"]
    assert isinstance(totals, dict)
    assert totals["examples"] == 12 and totals["failed"] == 0
    assert totals["network_connections_before_conflict"] == 0
    assert totals["intent_conflict_ratio"] == 1.0 and totals["identity_identical_ratio"] == 1.0
    rows = matrix["rows"]
    assert isinstance(rows, list)
    for row in rows:
        if row["class"] in ("payload", "profile", "binding"):
            assert row["admission"] == CONFLICT and row["intent_changed"] and row["delivery_keys_equal"]
        else:
            assert row["prepare_resumed"] is True and not row["intent_changed"]


def test_the_same_seed_draws_the_same_mutations(tmp_path: Path, matrix: dict[str, object]) -> None:
    again = run_identity_matrix(tmp_path, examples=12, seed=3)
    assert json.dumps(again, sort_keys=True) == json.dumps(matrix, sort_keys=True)


@pytest.mark.parametrize(("kind", "now", "admission", "resumed", "connects", "problem"), [
    ("payload", BASE, CONFLICT, None, 0, "intent did not change"),
    ("payload", _Identity(BASE.delivery_keys, BASE.mutation_keys, ("x", "y"), "pol1"), "resumed", None, 0,
     "admission answered resumed"),
    ("binding", _Identity(BASE.delivery_keys, BASE.mutation_keys, ("x", "y"), "pol1"), CONFLICT, None, 1,
     "network connection"),
    ("profile", _Identity(("other", "dk2"), BASE.mutation_keys, ("x", "y"), "pol1"), CONFLICT, None, 0,
     "delivery keys changed"),
    ("policy", _Identity(BASE.delivery_keys, BASE.mutation_keys, ("x", "in2"), "pol2"), CONFLICT, True, 0,
     "identity changed"),
    ("policy", BASE, CONFLICT, True, 0, "execution policy digest unchanged"),
    ("policy", _Identity(BASE.delivery_keys, BASE.mutation_keys, BASE.intents, "pol2"), CONFLICT, False, 0,
     "did not resume"),
    ("secret", _Identity(BASE.delivery_keys, ("mk9", "mk2"), BASE.intents, "pol1"), "resumed", True, 0,
     "identity changed"),
    ("secret", _Identity(BASE.delivery_keys, BASE.mutation_keys, BASE.intents, "pol2"), "resumed", True, 0,
     "secret changed the execution policy"),
])
def test_each_rule_fails_its_example_when_broken(kind: str, now: _Identity, admission: str, resumed: bool | None,
                                                 connects: int, problem: str) -> None:
    _, problems = _judge(Mutation("sync_batch", kind, "t"), BASE, now, admission=admission, resumed=resumed,
                         connects=connects)
    assert any(problem in text for text in problems), problems


def test_a_correct_example_has_no_problem() -> None:
    changed = _Identity(BASE.delivery_keys, BASE.mutation_keys, ("x", "y"), "pol1")
    assert _judge(Mutation("sync_batch", "payload", "reading"), BASE, changed, admission=CONFLICT, resumed=None,
                  connects=0) == (True, [])
    policy = _Identity(BASE.delivery_keys, BASE.mutation_keys, BASE.intents, "pol2")
    assert _judge(Mutation("sync_batch", "policy", "timeouts.read_ms"), BASE, policy, admission=CONFLICT,
                  resumed=True, connects=0) == (False, [])


def test_the_connect_counter_sees_a_connection_only_while_armed() -> None:
    counter = _ConnectCounter.get()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(2)
        with socket.create_connection(server.getsockname()):
            pass
        with counter.counting() as seen, socket.create_connection(server.getsockname()):
            pass
    assert seen == [1]


def test_a_row_names_what_changed_never_the_drawn_values() -> None:
    mutation = Mutation("sync_batch", "secret", "MOCK_RECEIVER_TOKEN", row=4, amount=777, token=SENTINEL)
    described = json.dumps(mutation.describe())
    assert SENTINEL not in described and "777" not in described
    assert json.dumps(Mutation("sync_batch", "payload", "reading", row=4, amount=777).describe()).count("777") == 0


def test_the_gate_flags_every_kind_of_identity_regression() -> None:
    good = {"totals": {"examples": 5, "failed": 0, "network_connections_before_conflict": 0,
                       "intent_conflict_ratio": 1.0, "identity_identical_ratio": 1.0}}
    assert identity_problems(good, good) == []
    assert identity_problems(None, None) == []
    assert identity_problems(good, None) == ["identity_conflict_matrix.json: in the baseline, missing now"]
    for field, value, text in (("failed", 1, "failed"), ("network_connections_before_conflict", 2, "connection"),
                               ("intent_conflict_ratio", 0.9, "intent_conflict_ratio"),
                               ("identity_identical_ratio", 0.5, "identity_identical_ratio"),
                               ("examples", 0, "no examples")):
        bad = {"totals": {**good["totals"], field: value}}
        assert any(text in problem for problem in identity_problems(good, bad)), field


COMMITTED = Path(__file__).resolve().parents[2] / "test_artifacts" / "baseline"
KEY = COMMITTED / "restproof-baseline.pub"


def test_the_gate_over_the_committed_baseline_fails_without_its_identity_matrix(tmp_path: Path) -> None:
    same = tmp_path / "same"
    shutil.copytree(COMMITTED, same)
    assert gate(COMMITTED, same, baseline_key=KEY, current_key=KEY).passed
    missing = tmp_path / "missing"
    shutil.copytree(COMMITTED, missing)
    (missing / ARTIFACTS / "identity_conflict_matrix.json").unlink()
    result = gate(COMMITTED, missing, baseline_key=KEY, current_key=KEY)
    assert "identity_conflict_matrix.json: in the baseline, missing now" in result.problems
    tampered = tmp_path / "tampered"
    shutil.copytree(COMMITTED, tampered)
    path = tampered / ARTIFACTS / "identity_conflict_matrix.json"
    path.write_bytes(path.read_bytes().replace(b'"failed":0', b'"failed":1', 1))
    result = gate(COMMITTED, tampered, baseline_key=KEY, current_key=KEY)
    assert not result.passed and result.problems[0].startswith("signature:")
