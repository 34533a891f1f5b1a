"""Typed, validated read access to the design contract for runtime code (journal, supervisor).

Runtime accepts only a tuple and a transition listed here. :func:`load_design_contract` loads
through the bounded YAML loader and runs the full schema and semantic validation before any
object is built, so an invalid contract can never be half-used.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

from sink.contracts.errors import ErrorCode
from sink.contracts.state import StateTuple  # re-exported (see __all__): the contract's unit of state
from sink.design.findings import Finding, report
from sink.design.validated_digest import (
    BUNDLED_CONTRACT,
    BUNDLED_CONTRACT_JSON,
    VALIDATED_CONTRACT_JSON_SHA256,
    VALIDATED_CONTRACT_SHA256,
)

__all__ = [
    "BUNDLED_CONTRACT",
    "DesignContract",
    "DesignContractInvalid",
    "StateTuple",
    "Transition",
    "TransitionKind",
    "load_design_contract",
]



class TransitionKind(StrEnum):
    AUTOMATIC = "automatic"
    OPERATOR_ONLY = "operator_only"


@dataclass(frozen=True, slots=True)
class Transition:
    id: str
    source: StateTuple
    target: StateTuple
    kind: TransitionKind
    cas_preconditions: tuple[str, ...]
    # Beyond the agreed core: monotonic fields the transition advances and the stable error codes
    # it reports (empty when it reports none).
    advances: tuple[str, ...] = ()
    error_codes: tuple[ErrorCode, ...] = ()


class DesignContractInvalid(ValueError):
    """The contract failed loading or validation. ``report`` is the stable JSON-able report."""

    def __init__(self, report_data: dict[str, Any]) -> None:
        self.report = report_data
        self.findings: list[dict[str, str]] = list(report_data["findings"])
        first = self.findings[0] if self.findings else {"rule": "?", "code": "?"}
        super().__init__(
            f"design contract invalid: {len(self.findings)} finding(s), first {first['rule']}/{first['code']}"
        )


class DesignContract:
    """An immutable, validated design contract with lookup helpers."""

    __slots__ = (
        "_by_id",
        "_by_pair",
        "_from",
        "_names",
        "contract_id",
        "initial",
        "legal_tuples",
        "monotonic_fields",
        "terminal_tuples",
        "transitions",
    )

    def __init__(self, document: dict[str, Any]) -> None:
        named = {entry["name"]: StateTuple.from_mapping(entry) for entry in document["legal_tuples"]}
        self.contract_id: str = document["contract_id"]
        self.initial: StateTuple = named[document["initial"]]
        self.legal_tuples: frozenset[StateTuple] = frozenset(named.values())
        self.terminal_tuples: frozenset[StateTuple] = frozenset(named[n] for n in document["terminal_tuples"])
        self.transitions: tuple[Transition, ...] = tuple(
            Transition(
                id=item["id"],
                source=named[item["from"]],
                target=named[item["to"]],
                kind=TransitionKind(item["kind"]),
                cas_preconditions=tuple(item["cas_preconditions"]),
                advances=tuple(item["advances"]),
                error_codes=tuple(ErrorCode(code) for code in item.get("error_codes", ())),
            )
            for item in document["transitions"]
        )
        self.monotonic_fields: frozenset[str] = frozenset(f["name"] for f in document["monotonic_fields"])
        self._names: dict[StateTuple, str] = {value: name for name, value in named.items()}
        outgoing: dict[StateTuple, list[Transition]] = {}
        for transition in self.transitions:
            outgoing.setdefault(transition.source, []).append(transition)
        self._from: dict[StateTuple, tuple[Transition, ...]] = {k: tuple(v) for k, v in outgoing.items()}
        self._by_pair = {(t.source, t.target): t for t in self.transitions}
        self._by_id = {(t.id, t.source): t for t in self.transitions}

    def is_legal(self, t: StateTuple) -> bool:
        return t in self.legal_tuples

    def is_terminal(self, t: StateTuple) -> bool:
        return t in self.terminal_tuples

    def transitions_from(self, source: StateTuple) -> tuple[Transition, ...]:
        return self._from.get(source, ())

    def find_transition(self, source: StateTuple, target: StateTuple) -> Transition | None:
        return self._by_pair.get((source, target))

    def transition_by_id(self, transition_id: str, source: StateTuple) -> Transition | None:
        return self._by_id.get((transition_id, source))

    def name_of(self, t: StateTuple) -> str | None:
        """The contract's stable name of a legal tuple (``None`` for an illegal one)."""
        return self._names.get(t)

    def tuple_named(self, name: str) -> StateTuple | None:
        for value, known in self._names.items():
            if known == name:
                return value
        return None


def _load(path: Path) -> DesignContract:
    # The validator (and jsonschema under it) is imported only when a contract is validated.
    from sink.bounded_yaml import BoundedYamlError, load_bounded_yaml_file  # noqa: PLC0415
    from sink.design.validator import contract_id_of, validate_document, yaml_finding  # noqa: PLC0415

    try:
        document = load_bounded_yaml_file(path)
    except BoundedYamlError as error:
        raise DesignContractInvalid(report(None, [yaml_finding(error)])) from None
    findings: list[Finding] = validate_document(document)
    if findings:
        raise DesignContractInvalid(report(contract_id_of(document), findings))
    return DesignContract(document)


@cache
def _bundled() -> DesignContract:
    """The bundled contract. Its bytes were validated in full when the package was built and
    tested (``tests/design`` pins their digest in ``validated_digest``, beside the digest of the
    same document as JSON): pinned bytes are read from the JSON twin, which parses in about a
    millisecond instead of a tenth of a second, and are not validated again (about a third of a
    second of CPU). Any other bytes (an edited installation) are validated in full."""
    data = BUNDLED_CONTRACT.read_bytes()
    if hashlib.sha256(data).hexdigest() != VALIDATED_CONTRACT_SHA256:
        return _load(BUNDLED_CONTRACT)
    try:
        twin = BUNDLED_CONTRACT_JSON.read_bytes()
    except OSError:
        twin = b""
    if hashlib.sha256(twin).hexdigest() != VALIDATED_CONTRACT_JSON_SHA256:
        # PyYAML is imported only here and in ``_load``: the pinned JSON twin is the usual path.
        from sink.bounded_yaml import load_bounded_yaml  # noqa: PLC0415

        return DesignContract(load_bounded_yaml(data, source=str(BUNDLED_CONTRACT)))
    return DesignContract(json.loads(twin))


def load_design_contract(path: Path | None = None) -> DesignContract:
    """Bundled sink/design/contract.yaml when path is None (cached); validates fully; raises
    DesignContractInvalid (with a stable JSON-able report) otherwise."""
    if path is None:
        return _bundled()
    return _load(Path(path))
