"""The behaviour-rule branches test_dc_rule_kills.py did not separate (issue 14 survivors).

Each case is the smallest edit of the bundled contract that makes exactly one condition of a rule
decide: a finalized checkpoint that moves but is no promotion, a submit from a tuple whose effect
is NONE_PROVEN but which is not SEALED/RETRY_WAIT, an edge between two SUBMITTING tuples (not a
new submit), a guard refusal blocking one live and one unreachable transition.
"""

from __future__ import annotations

from typing import Any

from dc_mutations import bundled_document, transition
from test_dc_rule_kills import _add_transition, _add_tuple

from sink.design.validator import validate_document

Document = dict[str, Any]


def _found(doc: Document) -> set[tuple[str, str]]:
    return {(f.rule, f.location) for f in validate_document(doc)}


def test_a_finalized_checkpoint_demotion_is_not_a_promotion() -> None:
    """ELIGIBLE -> BLOCKED keeps every other axis: only ELIGIBLE -> PROMOTED may leave FINALIZED."""
    doc = bundled_document()
    _add_tuple(doc, "finalized_not_accepted_full_eligible", "finalized_not_accepted_full_held",
               checkpoint_state="BLOCKED")
    index = _add_transition(doc, "checkpoint_held", "finalized_not_accepted_full_eligible",
                            "finalized_not_accepted_full_held")
    assert ("terminal_closure", f"/transitions/{index}") in _found(doc)


def test_a_submit_from_a_planned_tuple_is_refused_although_nothing_was_sent() -> None:
    """PLANNED has NONE_PROVEN too: only SEALED and RETRY_WAIT may enter SUBMITTING."""
    doc = bundled_document()
    started = transition(doc, "submit_started", "sealed")
    index = _add_transition(doc, "submit_unsealed", "planned", "submitting",
                            preconditions=list(started["cas_preconditions"]), advances=list(started["advances"]))
    assert ("safe_retry", f"/transitions/{index}") in _found(doc)


def test_an_edge_between_two_submitting_tuples_is_not_a_new_submit() -> None:
    doc = bundled_document()
    _add_tuple(doc, "submitting", "submitting_not_provable", verification_state="NOT_PROVABLE")
    index = _add_transition(doc, "submit_noted", "submitting", "submitting_not_provable")
    found = _found(doc)
    where = f"/transitions/{index}"
    assert ("safe_retry", where) not in found and ("safe_retry", f"{where}/cas_preconditions") not in found
    assert ("safe_retry", f"{where}/advances") not in found


def test_no_reachable_retry_wait_says_so() -> None:
    doc = bundled_document()
    doc["transitions"] = [t for t in doc["transitions"] if t["to"] != "retry_wait"]
    messages = [f.message for f in validate_document(doc) if (f.rule, f.location) == ("safe_retry", "/legal_tuples")]
    assert messages == ["no reachable RETRY_WAIT tuple"]


def test_a_refusal_counts_as_reported_when_any_transition_it_blocks_is_live() -> None:
    doc = bundled_document()
    _add_tuple(doc, "sealed", "sealed_orphan", verification_state="NOT_PROVABLE")  # reached by nothing
    _add_transition(doc, "orphan_seal", "sealed_orphan", "sealed")
    refusal = next(r for r in doc["guard_refusals"] if r["code"] == "REST_DELIVERY_INTENT_CONFLICT")
    refusal["blocks"] = ["orphan_seal", *refusal["blocks"]]
    found = _found(doc)
    assert ("reachability", "/legal_tuples/" + str(len(doc["legal_tuples"]) - 1)) in found  # the edit took
    assert ("failure_reachability", "/stable_error_codes") not in found


def _absence(doc: Document) -> tuple[dict[str, Any], str]:
    t = transition(doc, "reconciled_absence_proven", "reconciling_unknown_not_accepted")
    index = next(i for i, candidate in enumerate(doc["transitions"]) if candidate is t)
    return t, f"/transitions/{index}"


def test_the_bundled_absence_reconciliation_is_a_safe_retry() -> None:
    _, where = _absence(doc := bundled_document())
    assert ("safe_retry", where) not in _found(doc)


def test_an_absence_reconciliation_without_its_proof_is_refused() -> None:
    t, where = _absence(doc := bundled_document())
    t["cas_preconditions"].remove("exact_absence_proven")
    assert ("safe_retry", where) in _found(doc)


def test_an_absence_reconciliation_without_budget_is_refused() -> None:
    t, where = _absence(doc := bundled_document())
    t["cas_preconditions"].remove("retry_budget_remaining")
    assert ("safe_retry", where) in _found(doc)


def test_an_automatic_move_into_retry_wait_from_verification_is_refused() -> None:
    """The proof of exact absence is an operator's reconciliation, never an automatic step."""
    t, where = _absence(doc := bundled_document())
    t["kind"] = "automatic"
    assert ("safe_retry", where) in _found(doc)


def test_an_operator_move_into_retry_wait_from_a_finalized_tuple_is_refused() -> None:
    """Only an open reconciliation (VERIFYING) carries the new evidence; a finalized tuple is reopened first."""
    t, _ = _absence(doc := bundled_document())
    index = _add_transition(doc, "reopen_to_retry", "finalized_not_accepted_outcome_lost", "retry_wait",
                            preconditions=list(t["cas_preconditions"]))
    doc["transitions"][index]["kind"] = "operator_only"
    assert ("safe_retry", f"/transitions/{index}") in _found(doc)
