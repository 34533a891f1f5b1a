"""One deterministic mutation of the bundled contract per validator rule (negative cases).

Each mutation takes a deep copy of the bundled document and breaks exactly the property its
rule guards; tests assert the rule id then appears in the findings.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Any

from sink.bounded_yaml import load_bounded_yaml_file
from sink.design.query import BUNDLED_CONTRACT

Document = dict[str, Any]


@cache
def _bundled() -> Document:
    document: Document = load_bounded_yaml_file(BUNDLED_CONTRACT)
    return document


def bundled_document() -> Document:
    return copy.deepcopy(_bundled())


def tuple_entry(doc: Document, name: str) -> dict[str, Any]:
    return next(entry for entry in doc["legal_tuples"] if entry["name"] == name)


def transition(doc: Document, tid: str, source: str) -> dict[str, Any]:
    return next(t for t in doc["transitions"] if t["id"] == tid and t["from"] == source)


def _schema(doc: Document) -> None:
    doc["transitions"][0]["unexpected"] = True


def _axes(doc: Document) -> None:
    values = doc["axes"]["execution_state"]
    values[0], values[1] = values[1], values[0]


def _legal_tuples(doc: Document) -> None:
    clone = dict(tuple_entry(doc, "sealed"))
    clone["name"] = "sealed_again"
    doc["legal_tuples"].append(clone)


def _initial(doc: Document) -> None:
    doc["initial"] = "sealed"


def _endpoints(doc: Document) -> None:
    transition(doc, "plan_sealed", "planned")["to"] = "no_such_tuple"


def _cas(doc: Document) -> None:
    transition(doc, "poll_observed_succeeded", "waiting_ack_running")["cas_preconditions"].remove(
        "revision_matches"
    )


def _monotonic(doc: Document) -> None:
    doc["monotonic_fields"] = [f for f in doc["monotonic_fields"] if f["name"] != "observation_ordinal"]


def _catalog(doc: Document) -> None:
    doc["error_catalog"]["REST_DELIVERY_UNSAFE_RETRY"]["operator_action"] = "Just resend it."


def _references(doc: Document) -> None:
    doc["invariants"][0]["statement"] += " See REST_DELIVERY_NOT_IN_CATALOG."


def _identities(doc: Document) -> None:
    entry = next(e for e in doc["identities"]["entries"] if e["name"] == "receiver_mutation_key")
    entry["inputs"].append("sealed_payload_digest")


def _named(doc: Document) -> None:
    doc["invariants"].append(dict(doc["invariants"][0]))


def _reachability(doc: Document) -> None:
    # A legal, terminal tuple no transition leads to.
    doc["legal_tuples"].append({
        "name": "orphan_final", "execution_state": "FINALIZED", "remote_effect": "NONE_PROVEN",
        "acknowledgement_state": "NOT_ACCEPTED", "verification_state": "NOT_PROVABLE",
        "checkpoint_state": "BLOCKED", "description": "Reachable from nowhere.",
    })
    doc["terminal_tuples"].append("orphan_final")


def _terminal(doc: Document) -> None:
    # The most dangerous shape: a finalized not-started operation silently resent.
    doc["transitions"].append({
        "id": "resend_after_final", "from": "finalized_not_accepted_not_started", "to": "sealed",
        "kind": "automatic", "cas_preconditions": ["revision_matches"], "advances": ["revision"],
    })


def _dead_end(doc: Document) -> None:
    doc["transitions"] = [t for t in doc["transitions"] if t["from"] != "reconciling_partial_expired"]


def _acknowledgement(doc: Document) -> None:
    transition(doc, "verified_full", "verifying_failed")["to"] = "finalized_succeeded_full_eligible"


def _checkpoint(doc: Document) -> None:
    tuple_entry(doc, "finalized_failed_partial_failed")["checkpoint_state"] = "ELIGIBLE"


def _running(doc: Document) -> None:
    tuple_entry(doc, "finalized_accepted_unknown_not_provable")["acknowledgement_state"] = "RUNNING"


def _unknown(doc: Document) -> None:
    transition(doc, "reconciled_no_effect", "reconciling_unknown_failed")["kind"] = "automatic"


def _verification(doc: Document) -> None:
    doc["transitions"].append({
        "id": "auto_pass", "from": "finalized_failed_partial_failed", "to": "finalized_failed_full_eligible",
        "kind": "automatic", "cas_preconditions": ["revision_matches"], "advances": ["revision"],
    })


def _safe_retry(doc: Document) -> None:
    transition(doc, "request_not_started_retry", "submitting")["cas_preconditions"].remove(
        "request_not_started_proven"
    )


def _failure_reachability(doc: Document) -> None:
    for item in doc["transitions"]:
        codes = [c for c in item.get("error_codes", []) if c != "REST_DELIVERY_COUNT_MISMATCH"]
        if codes:
            item["error_codes"] = codes
        else:
            item.pop("error_codes", None)


def _forbidden(doc: Document) -> None:
    doc["forbidden_combinations"].append({
        "id": "no_waiting", "match": {"execution_state": ["RETRY_WAIT"]}, "statement": "Illustrative.",
    })


MUTATIONS: dict[str, Callable[[Document], None]] = {
    "schema": _schema,
    "axes_match_state_enums": _axes,
    "legal_tuples_well_formed": _legal_tuples,
    "initial_tuple_legal": _initial,
    "transition_endpoints_legal": _endpoints,
    "cas_preconditions": _cas,
    "monotonic_fields": _monotonic,
    "error_catalog": _catalog,
    "error_references": _references,
    "identities": _identities,
    "named_entries_unique": _named,
    "reachability": _reachability,
    "terminal_closure": _terminal,
    "no_dead_ends": _dead_end,
    "acknowledgement_preservation": _acknowledgement,
    "checkpoint_requires_full_passed": _checkpoint,
    "running_forbidden": _running,
    "unknown_not_relaxed": _unknown,
    "verification_upgrade_operator_only": _verification,
    "safe_retry": _safe_retry,
    "failure_reachability": _failure_reachability,
    "forbidden_combinations": _forbidden,
}


def mutated(rule: str) -> Document:
    doc = bundled_document()
    MUTATIONS[rule](doc)
    return doc
