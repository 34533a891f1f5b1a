"""Schema and semantic validation of the design contract, producing stable findings.

Order: bounded YAML load (rule ``yaml``) -> Draft 2020-12 schema (rule ``schema``) -> every
semantic rule in :data:`RULES`. Semantic rules only run on a schema-valid document, because
they rely on its shape; each is independent, so one mutation shows every rule it breaks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from sink.bounded_yaml import BoundedYamlError, load_bounded_yaml
from sink.design import rules_behaviour as behaviour
from sink.design import rules_structure as structure
from sink.design.findings import Finding, sorted_findings
from sink.design.model import ContractGraph

Rule = Callable[[dict[str, Any], ContractGraph], list[Finding]]

# Stable rule ids, their checks and a one-line statement (documented in docs/design-contract.md).
RULES: dict[str, tuple[Rule, str]] = {
    "axes_match_state_enums": (structure.check_axes,
                               "The five axes list exactly the values of sink.contracts.state, in order."),
    "legal_tuples_well_formed": (structure.check_legal_tuples,
                                 "Tuple names and axis combinations are unique; values are declared."),
    "initial_tuple_legal": (structure.check_initial,
                            "The initial tuple is legal and is PLANNED/NONE_PROVEN/NOT_ACCEPTED/NOT_RUN/BLOCKED."),
    "transition_endpoints_legal": (structure.check_transitions,
                                   "Endpoints are legal tuples; (id, from) and (from, to) are unique."),
    "cas_preconditions": (structure.check_cas,
                          "Every transition is a revision CAS and names only declared predicates."),
    "monotonic_fields": (structure.check_monotonic,
                         "Mandatory monotonic fields are listed; transitions advance only listed fields; a new "
                         "full effect advances the generation watermark, a promotion the frontier."),
    "error_catalog": (structure.check_error_catalog,
                      "stable_error_codes == error_catalog == sink.contracts.errors, metadata identical."),
    "error_references": (structure.check_error_references,
                         "Every REST_DELIVERY_* string resolves; guard refusals name real transitions."),
    "identities": (structure.check_identities,
                   "Identities are unique and in derivation order; the remote fence and delivery key "
                   "exclude payload digests."),
    "named_entries_unique": (structure.check_named_lists, "Invariant and forbidden-combination ids are unique."),
    "reachability": (behaviour.check_reachability, "Every legal tuple is reachable from the initial tuple."),
    "terminal_closure": (behaviour.check_terminal_closure,
                         "Terminal tuples are FINALIZED with no automatic exit; any other FINALIZED tuple "
                         "leaves automatically only by checkpoint promotion."),
    "no_dead_ends": (behaviour.check_no_dead_ends, "Every non-terminal tuple has an outgoing transition."),
    "acknowledgement_preservation": (behaviour.check_acknowledgement_preservation,
                                     "Observed terminal acknowledgements never change; reconciliation "
                                     "preserves the acknowledgement; acknowledgement never moves back."),
    "checkpoint_requires_full_passed": (behaviour.check_checkpoint,
                                        "ELIGIBLE/PROMOTED only with FULLY_APPLIED + PASSED."),
    "running_forbidden": (behaviour.check_running, "FINALIZED + RUNNING and UNKNOWN + RUNNING are illegal."),
    "unknown_not_relaxed": (behaviour.check_unknown_not_relaxed,
                            "No automatic path leads from UNKNOWN to NONE_PROVEN."),
    "verification_upgrade_operator_only": (behaviour.check_verification_upgrade,
                                           "FAILED/NOT_PROVABLE reach PASSED only through an operator step."),
    "safe_retry": (behaviour.check_safe_retry,
                   "RETRY_WAIT needs REQUEST_NOT_STARTED proof (from SUBMITTING) or an operator's certified proof "
                   "of exact absence (from a reconciliation) and budget; entering SUBMITTING starts from proven "
                   "absence, carries every submit guard and advances attempt_ordinal."),
    "failure_reachability": (behaviour.check_failure_reachability,
                             "Every stable error code is reported by a reachable transition or a guard refusal."),
    "forbidden_combinations": (behaviour.check_forbidden,
                               "No legal tuple matches a declared forbidden combination."),
}
ALL_RULE_IDS: tuple[str, ...] = ("yaml", "schema", *RULES)

_SCHEMA_RESOURCE = "contract.schema.json"
_SHORT_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,40}")


@cache
def contract_schema() -> dict[str, Any]:
    text = resources.files("sink.design").joinpath(_SCHEMA_RESOURCE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    Draft202012Validator.check_schema(schema)
    return schema


def _pointer(path: Any) -> str:
    return "".join(f"/{part}" for part in path) or "/"


def schema_findings(document: Any) -> list[Finding]:
    validator = Draft202012Validator(contract_schema())
    findings = []
    for error in validator.iter_errors(document):
        # jsonschema messages quote the offending instance; report only keyword, location and,
        # for an unexpected key, the key name when it is a short identifier.
        message = f"violates '{error.validator}' at {_pointer(error.absolute_schema_path)}"
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
            extras = sorted(str(key) for key in error.instance if key not in known)
            names = [key if _SHORT_NAME.fullmatch(key) else "<key>" for key in extras]
            message += f"; unexpected key(s): {', '.join(names)}"
        findings.append(Finding(rule="schema", location=_pointer(error.absolute_path),
                                code=f"schema.{error.validator}", message=message))
    return findings


def validate_document(document: Any) -> list[Finding]:
    """All findings of a loaded document, sorted; empty when the contract is valid."""
    findings = schema_findings(document)
    if findings:
        return sorted_findings(findings)
    graph = ContractGraph(document)
    for check, _ in RULES.values():
        findings.extend(check(document, graph))
    return sorted_findings(findings)


def yaml_finding(error: BoundedYamlError) -> Finding:
    return Finding(rule="yaml", location=error.location or "", code=error.code, message=error.message)


def validate_bytes(data: bytes, source: str) -> tuple[Any, list[Finding]]:
    """Bounded-load then validate; returns (document or None, sorted findings)."""
    try:
        document = load_bounded_yaml(data, source=source)
    except BoundedYamlError as error:
        return None, [yaml_finding(error)]
    return document, validate_document(document)


def contract_id_of(document: Any) -> str | None:
    if isinstance(document, dict) and isinstance(document.get("contract_id"), str):
        return str(document["contract_id"])[:100]
    return None
