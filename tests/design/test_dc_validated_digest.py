"""The bundled contract is validated in full by this suite; a process trusts only those bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from sink.bounded_yaml import load_bounded_yaml_file
from sink.design import query, validator
from sink.design.validated_digest import (
    BUNDLED_CONTRACT_JSON,
    VALIDATED_CONTRACT_JSON_SHA256,
    VALIDATED_CONTRACT_SHA256,
    current_digest,
    json_twin,
)


def test_pinned_digest_is_the_bundled_contract_and_it_validates() -> None:
    assert current_digest() == VALIDATED_CONTRACT_SHA256, (
        "contract.yaml changed: run `python -m sink.design.validated_digest` (it validates first)")
    assert validator.validate_document(load_bounded_yaml_file(query.BUNDLED_CONTRACT)) == []


def test_json_twin_is_the_same_document_and_pinned() -> None:
    twin = BUNDLED_CONTRACT_JSON.read_bytes()
    assert twin == json_twin(load_bounded_yaml_file(query.BUNDLED_CONTRACT))
    assert hashlib.sha256(twin).hexdigest() == VALIDATED_CONTRACT_JSON_SHA256


def test_a_twin_that_differs_is_not_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    twin = tmp_path / "contract.json"
    document = json.loads(BUNDLED_CONTRACT_JSON.read_bytes())
    document["transitions"] = document["transitions"][:1]
    twin.write_bytes(json_twin(document))
    monkeypatch.setattr(query, "BUNDLED_CONTRACT_JSON", twin)
    query._bundled.cache_clear()
    try:
        contract = query.load_design_contract()
    finally:
        query._bundled.cache_clear()
    assert len(contract.transitions) > 1  # read from the pinned YAML, not from the edited twin


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    real = validator.validate_document

    def spy(document: Any) -> Any:
        calls.append(document)
        return real(document)

    monkeypatch.setattr(validator, "validate_document", spy)
    query._bundled.cache_clear()
    return calls


def test_pinned_bytes_are_parsed_without_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy(monkeypatch)
    try:
        contract = query.load_design_contract()
    finally:
        query._bundled.cache_clear()
    assert calls == []
    assert contract.transitions  # the same contract, built


def test_other_bytes_are_validated_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy(monkeypatch)
    monkeypatch.setattr(query, "VALIDATED_CONTRACT_SHA256", "0" * 64)
    try:
        query.load_design_contract()
    finally:
        query._bundled.cache_clear()
    assert len(calls) == 1


def test_edited_bundled_contract_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    edited = tmp_path / "contract.yaml"
    text = query.BUNDLED_CONTRACT.read_text(encoding="utf-8")
    edited.write_text(text.replace("transitions:", "transitionz:", 1), encoding="utf-8")
    monkeypatch.setattr(query, "BUNDLED_CONTRACT", edited)
    query._bundled.cache_clear()
    try:
        with pytest.raises(query.DesignContractInvalid):
            query.load_design_contract()
    finally:
        query._bundled.cache_clear()
