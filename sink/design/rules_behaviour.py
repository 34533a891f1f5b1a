"""Behavioural rules over the tuple graph: reachability, terminality and the outcome invariants."""

from __future__ import annotations

from typing import Any

from sink.design.findings import Finding
from sink.design.model import (
    ACKNOWLEDGEMENT,
    ACKNOWLEDGEMENT_RANK,
    AXIS_NAMES,
    CHECKPOINT,
    EFFECT,
    EXECUTION,
    TERMINAL_ACKNOWLEDGEMENTS,
    VERIFICATION,
    Axes,
    ContractGraph,
    Edge,
)

_E, _R, _A, _V, _C = EXECUTION, EFFECT, ACKNOWLEDGEMENT, VERIFICATION, CHECKPOINT

# Model-wide guards of the one critical submit transaction (seed: "Attempt and capacity authority",
# "Replacement generation and overlap fence", journal epoch gate).
SUBMIT_GUARDS = frozenset({
    "journal_epoch_open",
    "mutation_lease_held",
    "generation_admissible",
    "may_attempt_marker_durable",
    "capacity_reserved",
})


def _finding(rule: str, location: str, message: str) -> Finding:
    return Finding(rule=rule, location=location, code=f"design.{rule}", message=message)


def _tuple_location(doc: dict[str, Any], name: str) -> str:
    for index, entry in enumerate(doc["legal_tuples"]):
        if entry["name"] == name:
            return f"/legal_tuples/{index}"
    return "/legal_tuples"


def check_reachability(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    reached = graph.reachable([graph.initial])
    return [
        _finding("reachability", _tuple_location(doc, name), f"tuple {name} is unreachable from the initial tuple")
        for name in sorted(set(graph.tuples) - reached)
    ]


def _is_checkpoint_promotion(edge: Edge, graph: ContractGraph) -> bool:
    source, target = graph.tuples[edge.source], graph.tuples[edge.target]
    return (
        source[:_C] == target[:_C]
        and source[_E] == "FINALIZED"
        and (source[_C], target[_C]) == ("ELIGIBLE", "PROMOTED")
    )


def check_terminal_closure(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    findings = []
    for index, name in enumerate(doc["terminal_tuples"]):
        if name not in graph.tuples:
            findings.append(_finding("terminal_closure", f"/terminal_tuples/{index}",
                                     f"terminal tuple {name} is not a legal tuple"))
        elif graph.tuples[name][_E] != "FINALIZED":
            findings.append(_finding("terminal_closure", f"/terminal_tuples/{index}",
                                     f"terminal tuple {name} is not FINALIZED"))
    for edge in graph.known_edges():
        if edge.automatic and edge.source in graph.terminal:
            findings.append(_finding("terminal_closure", f"/transitions/{edge.index}",
                                     f"automatic transition {edge.id} leaves terminal tuple {edge.source}"))
        elif (edge.automatic and graph.tuples[edge.source][_E] == "FINALIZED"
              and not _is_checkpoint_promotion(edge, graph)):
            findings.append(_finding("terminal_closure", f"/transitions/{edge.index}",
                                     f"automatic transition {edge.id} leaves FINALIZED {edge.source} "
                                     "for anything but checkpoint promotion"))
    automatic_sources = {edge.source for edge in graph.known_edges() if edge.automatic}
    for name, axes in graph.tuples.items():
        if axes[_E] == "FINALIZED" and name not in graph.terminal and name not in automatic_sources:
            findings.append(_finding("terminal_closure", _tuple_location(doc, name),
                                     f"FINALIZED tuple {name} has no automatic exit but is not terminal"))
    return findings


def check_no_dead_ends(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    sources = {edge.source for edge in graph.known_edges()}
    return [
        _finding("no_dead_ends", _tuple_location(doc, name), f"non-terminal tuple {name} has no outgoing transition")
        for name in sorted(set(graph.tuples) - graph.terminal - sources)
    ]


def check_acknowledgement_preservation(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    findings = []
    for edge in graph.known_edges():
        before, after = graph.tuples[edge.source][_A], graph.tuples[edge.target][_A]
        where = f"/transitions/{edge.index}"
        if before in TERMINAL_ACKNOWLEDGEMENTS and after != before:
            findings.append(_finding("acknowledgement_preservation", where,
                                     f"{edge.id} changes observed acknowledgement {before} to {after}"))
        elif edge.kind == "operator_only" and after != before:
            findings.append(_finding("acknowledgement_preservation", where,
                                     f"reconciliation {edge.id} does not preserve acknowledgement {before}"))
        elif ACKNOWLEDGEMENT_RANK[after] < ACKNOWLEDGEMENT_RANK[before]:
            findings.append(_finding("acknowledgement_preservation", where,
                                     f"{edge.id} moves acknowledgement back from {before} to {after}"))
    return findings


def check_checkpoint(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    return [
        _finding("checkpoint_requires_full_passed", _tuple_location(doc, name),
                 f"tuple {name} moves the checkpoint without FULLY_APPLIED + PASSED")
        for name, axes in sorted(graph.tuples.items())
        if axes[_C] in ("ELIGIBLE", "PROMOTED") and (axes[_R], axes[_V]) != ("FULLY_APPLIED", "PASSED")
    ]


def check_running(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    findings = []
    for name, axes in sorted(graph.tuples.items()):
        if axes[_A] == "RUNNING" and axes[_E] == "FINALIZED":
            findings.append(_finding("running_forbidden", _tuple_location(doc, name),
                                     f"tuple {name} combines FINALIZED with RUNNING"))
        if axes[_A] == "RUNNING" and axes[_R] == "UNKNOWN":
            findings.append(_finding("running_forbidden", _tuple_location(doc, name),
                                     f"tuple {name} combines UNKNOWN with RUNNING"))
    return findings


def check_unknown_not_relaxed(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    findings = []
    for name, axes in sorted(graph.tuples.items()):
        if axes[_R] != "UNKNOWN":
            continue
        hit = graph.automatic_path_exists(name, lambda target: target[_R] == "NONE_PROVEN")
        if hit is not None:
            findings.append(_finding("unknown_not_relaxed", _tuple_location(doc, name),
                                     f"UNKNOWN tuple {name} reaches NONE_PROVEN {hit} automatically"))
    return findings


def check_verification_upgrade(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    findings = []
    for name, axes in sorted(graph.tuples.items()):
        if axes[_V] not in ("FAILED", "NOT_PROVABLE"):
            continue
        hit = graph.automatic_path_exists(name, lambda target: target[_V] == "PASSED")
        if hit is not None:
            findings.append(_finding("verification_upgrade_operator_only", _tuple_location(doc, name),
                                     f"{axes[_V]} tuple {name} reaches PASSED {hit} without an operator"))
    return findings


def check_safe_retry(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    findings = []
    for edge in graph.known_edges():
        source, target = graph.tuples[edge.source], graph.tuples[edge.target]
        where = f"/transitions/{edge.index}"
        if target[_E] == "RETRY_WAIT":
            # Two proofs of absence open a retry: the transport's REQUEST_NOT_STARTED for the attempt
            # just made, or an operator reconciliation's certified read-only proof of exact absence.
            if source[_E] == "SUBMITTING":
                proof = "request_not_started_proven"
            elif edge.kind == "operator_only" and source[_E] == "VERIFYING":
                proof = "exact_absence_proven"
            else:
                proof = None
            missing = {proof or "request_not_started_proven", "retry_budget_remaining"} - set(edge.preconditions)
            if missing or proof is None or target[_R] != "NONE_PROVEN":
                findings.append(_finding("safe_retry", where,
                                         f"{edge.id} enters RETRY_WAIT without SUBMITTING (or an operator "
                                         f"reconciliation), NONE_PROVEN and preconditions "
                                         f"{sorted(missing) or 'present'}"))
        if target[_E] == "SUBMITTING" and source[_E] != "SUBMITTING":
            if source[_E] not in ("SEALED", "RETRY_WAIT") or source[_R] != "NONE_PROVEN":
                findings.append(_finding("safe_retry", where,
                                         f"{edge.id} enters SUBMITTING without proof that nothing was sent"))
            missing_guards = SUBMIT_GUARDS - set(edge.preconditions)
            if missing_guards:
                findings.append(_finding("safe_retry", f"{where}/cas_preconditions",
                                         f"{edge.id} enters SUBMITTING without {sorted(missing_guards)}"))
            if "attempt_ordinal" not in edge.advances:
                findings.append(_finding("safe_retry", f"{where}/advances",
                                         f"{edge.id} enters SUBMITTING without advancing attempt_ordinal"))
    if not any(graph.tuples[name][_E] == "RETRY_WAIT" for name in graph.reachable([graph.initial])):
        findings.append(_finding("safe_retry", "/legal_tuples", "no reachable RETRY_WAIT tuple"))
    return findings


def _matches(axes: Axes, pattern: dict[str, list[str]]) -> bool:
    values = dict(zip(AXIS_NAMES, axes, strict=True))
    return all(values[axis] in allowed for axis, allowed in pattern.items())


def check_forbidden(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    findings = []
    for index, rule in enumerate(doc["forbidden_combinations"]):
        for name, axes in sorted(graph.tuples.items()):
            unless = rule.get("unless")
            if _matches(axes, rule["match"]) and not (unless and _matches(axes, unless)):
                findings.append(_finding("forbidden_combinations", _tuple_location(doc, name),
                                         f"legal tuple {name} matches forbidden combination "
                                         f"{rule['id']} (/forbidden_combinations/{index})"))
    return findings


def check_failure_reachability(doc: dict[str, Any], graph: ContractGraph) -> list[Finding]:
    """Every stable error code is reported by a reachable transition or refuses one (guard refusal)."""
    reached = graph.reachable([graph.initial])
    reported = {code for edge in graph.known_edges() if edge.source in reached for code in edge.error_codes}
    live_ids = {edge.id for edge in graph.known_edges() if edge.source in reached}
    for refusal in doc["guard_refusals"]:
        if any(name in live_ids for name in refusal["blocks"]):
            reported.add(refusal["code"])
    return [
        _finding("failure_reachability", "/stable_error_codes",
                 f"{code} is neither reported by a reachable transition nor a guard refusal")
        for code in sorted(set(doc["stable_error_codes"]) - reported)
    ]
