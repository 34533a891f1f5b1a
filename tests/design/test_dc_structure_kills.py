"""Kill tests for sink/design/rules_structure.py (issue 14) that test_dc_rule_kills.py left open:
an undeclared axis value, one finding (not two) for an identity that hashes itself, and the
messages of the two identity rules that say what the contract must contain."""

from __future__ import annotations

from typing import Any

from dc_mutations import bundled_document

from sink.design.findings import Finding
from sink.design.validator import validate_document

Document = dict[str, Any]


def _identity_index(doc: Document, name: str) -> int:
    return next(i for i, e in enumerate(doc["identities"]["entries"]) if e["name"] == name)


def _findings(doc: Document, rule: str) -> list[Finding]:
    return [f for f in validate_document(doc) if f.rule == rule]


def test_a_tuple_value_not_declared_in_the_axes_is_reported_at_that_axis() -> None:
    doc = bundled_document()
    doc["axes"]["remote_effect"].remove("PARTIALLY_APPLIED")
    locations = {f.location for f in _findings(doc, "legal_tuples_well_formed")}
    used = [i for i, t in enumerate(doc["legal_tuples"]) if t["remote_effect"] == "PARTIALLY_APPLIED"]
    assert used and {f"/legal_tuples/{i}/remote_effect" for i in used} <= locations


def test_an_identity_that_hashes_itself_is_not_also_used_before_it_is_defined() -> None:
    doc = bundled_document()
    index = _identity_index(doc, "operation_namespace")
    doc["identities"]["entries"][index]["inputs"].append("operation_namespace")
    at_entry = [f for f in _findings(doc, "identities") if f.location == f"/identities/entries/{index}"]
    assert len(at_entry) == 1 and "hashes itself" in at_entry[0].message


def test_a_missing_fence_identity_says_what_the_fence_must_be() -> None:
    doc = bundled_document()
    doc["identities"]["entries"].pop(_identity_index(doc, "receiver_mutation_key"))
    messages = [f.message for f in _findings(doc, "identities")]
    assert messages == ["receiver_mutation_key must be H(operation_namespace, delivery_key)"]


def test_a_missing_delivery_key_says_it_must_exclude_payload_and_digests() -> None:
    doc = bundled_document()
    doc["identities"]["entries"][_identity_index(doc, "delivery_key")]["name"] = "logical_key"
    messages = {f.message for f in _findings(doc, "identities")}
    assert "delivery_key must be defined and exclude payload and content digests" in messages


def test_only_a_newly_promoted_tuple_must_advance_the_frontier() -> None:
    # A move between two promoted tuples promotes nothing: the frontier watermark is not required.
    doc = bundled_document()
    doc["transitions"].append({
        "id": "promoted_relabelled", "from": "finalized_accepted_full_promoted",
        "to": "finalized_succeeded_full_promoted", "kind": "operator_only",
        "cas_preconditions": ["revision_matches"], "advances": ["revision"],
    })
    where = f"/transitions/{len(doc['transitions']) - 1}/advances"
    messages = [f.message for f in _findings(doc, "monotonic_fields") if f.location == where]
    assert messages == []
    doc["transitions"][-1]["from"] = "finalized_accepted_full_eligible"
    messages = [f.message for f in _findings(doc, "monotonic_fields") if f.location == where]
    assert "transition promoted_relabelled must advance checkpoint_frontier" in messages
