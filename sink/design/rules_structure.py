"""Structural rules: axes, tuple and transition well-formedness, catalogs and cross-references."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from sink.contracts.errors import ERROR_CATALOG
from sink.contracts.state import AXES
from sink.design.findings import Finding
from sink.design.model import AXIS_NAMES, CHECKPOINT, EFFECT, ContractGraph, axes_of

EXPECTED_INITIAL = ("PLANNED", "NONE_PROVEN", "NOT_ACCEPTED", "NOT_RUN", "BLOCKED")
REQUIRED_MONOTONIC_FIELDS = (
    "revision",
    "journal_epoch",
    "attempt_ordinal",
    "observation_ordinal",
    "correction_revision",
    "highest_applied_generation",
    "checkpoint_frontier",
)
_CODE_TEXT = re.compile(r"REST_DELIVERY_[A-Z0-9_]+")


def _finding(rule: str, location: str, message: str) -> Finding:
    return Finding(rule=rule, location=location, code=f"design.{rule}", message=message)


def check_axes(doc: dict[str, Any], _: ContractGraph) -> list[Finding]:
    findings = []
    for axis, enum in AXES:
        expected = [member.value for member in enum]
        if doc["axes"][axis] != expected:
            findings.append(_finding("axes_match_state_enums", f"/axes/{axis}",
                                     f"axis {axis} must list exactly {expected} in this order"))
    return findings


def check_legal_tuples(doc: dict[str, Any], _: ContractGraph) -> list[Finding]:
    findings = []
    names: Counter[str] = Counter()
    combos: dict[tuple[str, ...], str] = {}
    for index, entry in enumerate(doc["legal_tuples"]):
        names[entry["name"]] += 1
        if names[entry["name"]] == 2:
            findings.append(_finding("legal_tuples_well_formed", f"/legal_tuples/{index}",
                                     f"tuple name {entry['name']} is listed twice"))
        combo = axes_of(entry)
        if combo in combos:
            findings.append(_finding("legal_tuples_well_formed", f"/legal_tuples/{index}",
                                     f"tuple {entry['name']} repeats the axes of {combos[combo]}"))
        combos.setdefault(combo, entry["name"])
        for axis in AXIS_NAMES:
            if entry[axis] not in doc["axes"][axis]:
                findings.append(_finding("legal_tuples_well_formed", f"/legal_tuples/{index}/{axis}",
                                         f"value of {axis} is not declared in /axes"))
    return findings


def check_initial(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    initial = doc["initial"]
    if initial not in graph.tuples:
        return [_finding("initial_tuple_legal", "/initial", f"initial tuple {initial} is not a legal tuple")]
    if graph.tuples[initial] != EXPECTED_INITIAL:
        return [_finding("initial_tuple_legal", "/initial",
                         f"initial tuple must be {'/'.join(EXPECTED_INITIAL)}")]
    return []


def check_transitions(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    findings = []
    by_id: set[tuple[str, str]] = set()
    by_pair: set[tuple[str, str]] = set()
    for edge in graph.edges:
        where = f"/transitions/{edge.index}"
        for end, name in (("from", edge.source), ("to", edge.target)):
            if name not in graph.tuples:
                findings.append(_finding("transition_endpoints_legal", f"{where}/{end}",
                                         f"transition {edge.id} names unknown tuple {name}"))
        if (edge.id, edge.source) in by_id:
            findings.append(_finding("transition_endpoints_legal", where,
                                     f"transition id {edge.id} repeats for source {edge.source}"))
        if (edge.source, edge.target) in by_pair:
            findings.append(_finding("transition_endpoints_legal", where,
                                     f"a second transition from {edge.source} to {edge.target}"))
        if edge.source == edge.target:
            findings.append(_finding("transition_endpoints_legal", where,
                                     f"transition {edge.id} does not change the tuple"))
        by_id.add((edge.id, edge.source))
        by_pair.add((edge.source, edge.target))
    return findings


def check_cas(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    findings = []
    declared = [item["id"] for item in doc["cas_predicates"]]
    for name, count in Counter(declared).items():
        if count > 1:
            findings.append(_finding("cas_preconditions", "/cas_predicates",
                                     f"predicate {name} is declared twice"))
    for edge in graph.edges:
        where = f"/transitions/{edge.index}"
        if "revision_matches" not in edge.preconditions:
            findings.append(_finding("cas_preconditions", f"{where}/cas_preconditions",
                                     f"transition {edge.id} is not a CAS on revision_matches"))
        if "revision" not in edge.advances:
            findings.append(_finding("cas_preconditions", f"{where}/advances",
                                     f"transition {edge.id} does not advance revision"))
        for name in edge.preconditions:
            if name not in declared:
                findings.append(_finding("cas_preconditions", f"{where}/cas_preconditions",
                                         f"precondition {name} is not declared in /cas_predicates"))
    return findings


def check_monotonic(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    findings = []
    listed = [item["name"] for item in doc["monotonic_fields"]]
    for name in REQUIRED_MONOTONIC_FIELDS:
        if name not in listed:
            findings.append(_finding("monotonic_fields", "/monotonic_fields",
                                     f"mandatory monotonic field {name} is missing"))
    for name, count in Counter(listed).items():
        if count > 1:
            findings.append(_finding("monotonic_fields", "/monotonic_fields", f"field {name} listed twice"))
    for edge in graph.edges:
        for name in edge.advances:
            if name not in listed:
                findings.append(_finding("monotonic_fields", f"/transitions/{edge.index}/advances",
                                         f"transition {edge.id} advances undeclared field {name}"))
    findings.extend(_watermarks_advanced(graph))
    return findings


def _watermarks_advanced(graph: ContractGraph) -> list[Finding]:
    """A newly proven full effect raises the generation watermark; a promotion moves the frontier."""
    findings = []
    for edge in graph.known_edges():
        source, target = graph.tuples[edge.source], graph.tuples[edge.target]
        required = []
        if target[EFFECT] == "FULLY_APPLIED" and source[EFFECT] != "FULLY_APPLIED":
            required.append("highest_applied_generation")
        if target[CHECKPOINT] == "PROMOTED" and source[CHECKPOINT] != "PROMOTED":
            required.append("checkpoint_frontier")
        for name in required:
            if name not in edge.advances:
                findings.append(_finding("monotonic_fields", f"/transitions/{edge.index}/advances",
                                         f"transition {edge.id} must advance {name}"))
    return findings


def _spec_dict(code: Any) -> dict[str, Any]:
    spec = ERROR_CATALOG[code]
    return {
        "exit_class": int(spec.exit_class),
        "exit_class_name": spec.exit_class.name,
        "retryability": spec.retryability.value,
        "operator_action": spec.operator_action,
        "severity": spec.severity.value,
        "evidence": spec.evidence.value,
    }


def check_error_catalog(doc: dict[str, Any], _: ContractGraph) -> list[Finding]:
    findings = []
    listed = set(doc["stable_error_codes"])
    catalog = doc["error_catalog"]
    runtime = {code.value: code for code in ERROR_CATALOG}
    for code in sorted(listed ^ set(catalog)):
        findings.append(_finding("error_catalog", "/stable_error_codes",
                                 f"{code} is not in both stable_error_codes and error_catalog"))
    for code in sorted((listed | set(catalog)) ^ set(runtime)):
        findings.append(_finding("error_catalog", "/error_catalog",
                                 f"{code} differs from sink.contracts.errors.ERROR_CATALOG"))
    for code in sorted(set(catalog) & set(runtime)):
        if catalog[code] != _spec_dict(runtime[code]):
            findings.append(_finding("error_catalog", f"/error_catalog/{code}",
                                     f"metadata of {code} differs from sink.contracts.errors"))
    return findings


def _strings(value: Any, pointer: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{pointer}/{key}", str(key)
            yield from _strings(item, f"{pointer}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{pointer}/{index}")


def check_error_references(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    findings = []
    catalog = doc["error_catalog"]
    for pointer, text in _strings(doc, ""):
        for code in _CODE_TEXT.findall(text):
            if code not in catalog:
                findings.append(_finding("error_references", pointer,
                                         f"{code} does not resolve to the error catalog"))
    transition_ids = {edge.id for edge in graph.edges}
    for index, refusal in enumerate(doc["guard_refusals"]):
        for name in refusal["blocks"]:
            if name not in transition_ids:
                findings.append(_finding("error_references", f"/guard_refusals/{index}/blocks",
                                         f"guard refusal blocks unknown transition {name}"))
    return findings


def check_identities(doc: dict[str, Any], _: ContractGraph) -> list[Finding]:
    findings = []
    all_names = {entry["name"] for entry in doc["identities"]["entries"]}
    defined: set[str] = set()
    for index, entry in enumerate(doc["identities"]["entries"]):
        where = f"/identities/entries/{index}"
        if entry["name"] in defined:
            findings.append(_finding("identities", where, f"identity {entry['name']} is defined twice"))
        if entry["name"] in entry["inputs"]:
            findings.append(_finding("identities", where, f"identity {entry['name']} hashes itself"))
        # Entries are listed in derivation order, which also rules out cycles between digests.
        for name in entry["inputs"]:
            if name in all_names and name not in defined and name != entry["name"]:
                findings.append(_finding("identities", where,
                                         f"identity {entry['name']} uses {name} before it is defined"))
        defined.add(entry["name"])
    by_name = {entry["name"]: entry for entry in doc["identities"]["entries"]}
    fence = by_name.get("receiver_mutation_key")
    if fence is None or fence["inputs"] != ["operation_namespace", "delivery_key"]:
        findings.append(_finding("identities", "/identities/entries",
                                 "receiver_mutation_key must be H(operation_namespace, delivery_key)"))
    key = by_name.get("delivery_key")
    if key is None or any("payload" in name or "digest" in name for name in key["inputs"]):
        findings.append(_finding("identities", "/identities/entries",
                                 "delivery_key must be defined and exclude payload and content digests"))
    return findings


def check_named_lists(doc: dict[str, Any], _: ContractGraph) -> list[Finding]:
    findings = []
    for section in ("invariants", "forbidden_combinations"):
        for name, count in Counter(item["id"] for item in doc[section]).items():
            if count > 1:
                findings.append(_finding("named_entries_unique", f"/{section}", f"id {name} is listed twice"))
    return findings
