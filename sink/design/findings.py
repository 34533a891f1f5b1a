"""The finding record of the design-contract validator and its stable report shape."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True, order=True)
class Finding:
    """One violated rule. ``rule`` is a stable rule id; ``code`` a stable machine code.

    ``location`` is a JSON pointer into the contract document (``/transitions/12``) or, for a
    YAML refusal, ``source:line:column``. ``message`` never quotes document content beyond names.
    """

    rule: str
    location: str
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(set(findings))


def report(contract_id: str | None, findings: list[Finding]) -> dict[str, Any]:
    """The stable JSON-able report: ``{"contract", "valid", "findings"}`` with sorted findings."""
    ordered = sorted_findings(findings)
    return {
        "contract": contract_id,
        "valid": not ordered,
        "findings": [finding.to_dict() for finding in ordered],
    }
