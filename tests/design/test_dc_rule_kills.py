"""Every branch of every design-contract rule, each with its exact finding location (issue 14).

dc_mutations.py breaks one property per rule; a rule with several branches (e.g. safe_retry:
RETRY_WAIT preconditions, SUBMITTING sources, each model-wide guard, attempt ordinal) needs one
negative case per branch, or a broken branch goes unnoticed while the rule still fires on the
other. Each case edits a copy of the bundled contract in the smallest way that breaks one branch
and asserts that (rule, location) is reported; the bundled contract itself reports nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from dc_mutations import bundled_document, transition, tuple_entry

from sink.design.rules_behaviour import SUBMIT_GUARDS
from sink.design.rules_structure import REQUIRED_MONOTONIC_FIELDS
from sink.design.validator import validate_document

Document = dict[str, Any]


def _tuple_index(doc: Document, name: str) -> int:
    return next(i for i, entry in enumerate(doc["legal_tuples"]) if entry["name"] == name)


def _transition_index(doc: Document, tid: str, source: str) -> int:
    return next(i for i, t in enumerate(doc["transitions"]) if t["id"] == tid and t["from"] == source)


def _add_tuple(doc: Document, like: str, name: str, **axes: str) -> int:
    entry = {**tuple_entry(doc, like), "name": name, **axes}
    doc["legal_tuples"].append(entry)
    return len(doc["legal_tuples"]) - 1


def _add_transition(doc: Document, tid: str, source: str, target: str, kind: str = "automatic",
                    preconditions: list[str] | None = None, advances: list[str] | None = None) -> int:
    doc["transitions"].append({
        "id": tid, "from": source, "to": target, "kind": kind,
        "cas_preconditions": preconditions or ["revision_matches"], "advances": advances or ["revision"],
    })
    return len(doc["transitions"]) - 1


def _found(doc: Document) -> set[tuple[str, str]]:
    return {(f.rule, f.location) for f in validate_document(doc)}


Case = Callable[[Document], tuple[str, str]]  # edits the document, returns the expected (rule, location)


# --- behaviour rules ---------------------------------------------------------------------------

def unreachable_tuple(doc: Document) -> tuple[str, str]:
    index = _add_tuple(doc, "finalized_not_accepted_no_effect", "orphan_tuple", acknowledgement_state="ACCEPTED",
                       verification_state="NOT_PROVABLE", remote_effect="NONE_PROVEN")
    doc["terminal_tuples"].append("orphan_tuple")
    return "reachability", f"/legal_tuples/{index}"


def terminal_not_legal(doc: Document) -> tuple[str, str]:
    doc["terminal_tuples"].append("no_such_tuple")
    return "terminal_closure", f"/terminal_tuples/{len(doc['terminal_tuples']) - 1}"


def terminal_not_finalized(doc: Document) -> tuple[str, str]:
    doc["terminal_tuples"].append("retry_wait")
    return "terminal_closure", f"/terminal_tuples/{len(doc['terminal_tuples']) - 1}"


def automatic_exit_from_terminal(doc: Document) -> tuple[str, str]:
    index = _add_transition(doc, "leave_terminal", "finalized_not_accepted_no_effect", "sealed")
    return "terminal_closure", f"/transitions/{index}"


def finalized_exit_that_is_not_promotion(doc: Document) -> tuple[str, str]:
    # ELIGIBLE -> PROMOTED but the acknowledgement changes too: not a pure checkpoint promotion.
    index = _add_transition(doc, "jump", "finalized_not_accepted_full_eligible", "finalized_accepted_full_promoted",
                            preconditions=["revision_matches", "checkpoint_lease_held"],
                            advances=["revision", "checkpoint_frontier"])
    return "terminal_closure", f"/transitions/{index}"


def finalized_exit_that_demotes(doc: Document) -> tuple[str, str]:
    name = "finalized_not_accepted_full_eligible"
    index = _add_transition(doc, "demote", name, "finalized_not_accepted_no_effect")
    return "terminal_closure", f"/transitions/{index}"


def finalized_without_exit_not_terminal(doc: Document) -> tuple[str, str]:
    name = "finalized_not_accepted_full_eligible"
    doc["transitions"] = [t for t in doc["transitions"] if t["from"] != name or t["kind"] != "automatic"]
    return "terminal_closure", f"/legal_tuples/{_tuple_index(doc, name)}"


def dead_end(doc: Document) -> tuple[str, str]:
    doc["transitions"] = [t for t in doc["transitions"] if t["from"] != "retry_wait"]
    return "no_dead_ends", f"/legal_tuples/{_tuple_index(doc, 'retry_wait')}"


def terminal_acknowledgement_changed(doc: Document) -> tuple[str, str]:
    index = _add_transition(doc, "rewrite_outcome", "verifying_succeeded", "verifying_failed")
    return "acknowledgement_preservation", f"/transitions/{index}"


def reconciliation_changes_acknowledgement(doc: Document) -> tuple[str, str]:
    t = transition(doc, "reconciled_no_effect", "reconciling_unknown_not_accepted")
    t["to"] = "finalized_accepted_no_effect"  # NOT_ACCEPTED -> ACCEPTED: forward, but operator-only
    return "acknowledgement_preservation", f"/transitions/{_transition_index(doc, t['id'], t['from'])}"


def acknowledgement_moves_back(doc: Document) -> tuple[str, str]:
    index = _add_transition(doc, "forget_receipt", "accepted_ack_accepted", "submitting")
    return "acknowledgement_preservation", f"/transitions/{index}"


def checkpoint_without_passed(doc: Document) -> tuple[str, str]:
    index = _add_tuple(doc, "finalized_not_accepted_full_eligible", "eligible_unverified",
                       verification_state="NOT_PROVABLE")
    return "checkpoint_requires_full_passed", f"/legal_tuples/{index}"


def promoted_without_full(doc: Document) -> tuple[str, str]:
    index = _add_tuple(doc, "finalized_not_accepted_full_promoted", "promoted_partial",
                       remote_effect="PARTIALLY_APPLIED")
    return "checkpoint_requires_full_passed", f"/legal_tuples/{index}"


def finalized_running(doc: Document) -> tuple[str, str]:
    index = _add_tuple(doc, "finalized_accepted_no_effect", "finalized_but_running", acknowledgement_state="RUNNING")
    return "running_forbidden", f"/legal_tuples/{index}"


def unknown_running(doc: Document) -> tuple[str, str]:
    index = _add_tuple(doc, "accepted_ack_running", "running_unknown", remote_effect="UNKNOWN")
    return "running_forbidden", f"/legal_tuples/{index}"


def unknown_relaxed(doc: Document) -> tuple[str, str]:
    _add_transition(doc, "forget_unknown", "finalized_not_accepted_outcome_lost", "retry_wait")
    return "unknown_not_relaxed", f"/legal_tuples/{_tuple_index(doc, 'finalized_not_accepted_outcome_lost')}"


def failed_verification_upgraded(doc: Document) -> tuple[str, str]:
    _add_transition(doc, "upgrade_failed", "finalized_not_accepted_partial_failed",
                    "finalized_not_accepted_full_eligible", advances=["revision", "highest_applied_generation"])
    return ("verification_upgrade_operator_only",
            f"/legal_tuples/{_tuple_index(doc, 'finalized_not_accepted_partial_failed')}")


def not_provable_verification_upgraded(doc: Document) -> tuple[str, str]:
    _add_transition(doc, "upgrade_not_provable", "finalized_not_accepted_partial_not_provable",
                    "finalized_not_accepted_full_eligible", advances=["revision", "highest_applied_generation"])
    return ("verification_upgrade_operator_only",
            f"/legal_tuples/{_tuple_index(doc, 'finalized_not_accepted_partial_not_provable')}")


def _retry(doc: Document) -> tuple[dict[str, Any], str]:
    t = transition(doc, "request_not_started_retry", "submitting")
    return t, f"/transitions/{_transition_index(doc, t['id'], t['from'])}"


def retry_without_not_started_proof(doc: Document) -> tuple[str, str]:
    t, where = _retry(doc)
    t["cas_preconditions"].remove("request_not_started_proven")
    return "safe_retry", where


def retry_without_budget(doc: Document) -> tuple[str, str]:
    t, where = _retry(doc)
    t["cas_preconditions"].remove("retry_budget_remaining")
    return "safe_retry", where


def retry_wait_from_accepted(doc: Document) -> tuple[str, str]:
    t = transition(doc, "request_not_started_retry", "submitting")
    index = _add_transition(doc, "late_retry", "accepted_ack_accepted", "retry_wait",
                            preconditions=list(t["cas_preconditions"]))
    return "safe_retry", f"/transitions/{index}"


def retry_wait_with_an_effect(doc: Document) -> tuple[str, str]:
    t, where = _retry(doc)
    retry_like = _add_tuple(doc, "retry_wait", "retry_wait_undetermined", remote_effect="UNDETERMINED")
    t["to"] = doc["legal_tuples"][retry_like]["name"]
    return "safe_retry", where


def submit_from_waiting(doc: Document) -> tuple[str, str]:
    t = transition(doc, "submit_started", "sealed")
    index = _add_transition(doc, "resend", "waiting_ack_accepted", "submitting",
                            preconditions=list(t["cas_preconditions"]), advances=list(t["advances"]))
    return "safe_retry", f"/transitions/{index}"


def submit_with_an_effect(doc: Document) -> tuple[str, str]:
    t = transition(doc, "submit_started", "sealed")
    index_tuple = _add_tuple(doc, "retry_wait", "retry_wait_unknown", remote_effect="UNKNOWN")
    index = _add_transition(doc, "resend_unknown", doc["legal_tuples"][index_tuple]["name"], "submitting",
                            preconditions=list(t["cas_preconditions"]), advances=list(t["advances"]))
    return "safe_retry", f"/transitions/{index}"


def submit_without_attempt_ordinal(doc: Document) -> tuple[str, str]:
    t = transition(doc, "submit_started", "sealed")
    t["advances"].remove("attempt_ordinal")
    return "safe_retry", f"/transitions/{_transition_index(doc, t['id'], t['from'])}/advances"


def _without_guard(guard: str) -> Case:
    def edit(doc: Document) -> tuple[str, str]:
        t = transition(doc, "retry_due", "retry_wait")
        t["cas_preconditions"].remove(guard)
        return "safe_retry", f"/transitions/{_transition_index(doc, t['id'], t['from'])}/cas_preconditions"
    edit.__name__ = f"retry_without_{guard}"
    return edit


def no_reachable_retry_wait(doc: Document) -> tuple[str, str]:
    doc["transitions"] = [t for t in doc["transitions"] if t["to"] != "retry_wait"]
    return "safe_retry", "/legal_tuples"


def forbidden_match(doc: Document) -> tuple[str, str]:
    index = _add_tuple(doc, "finalized_not_accepted_no_effect", "success_without_effect",
                       acknowledgement_state="SUCCEEDED")
    return "forbidden_combinations", f"/legal_tuples/{index}"


def forbidden_unless_not_met(doc: Document) -> tuple[str, str]:
    index = _add_tuple(doc, "verifying_succeeded", "verifying_verified", verification_state="PASSED")
    return "forbidden_combinations", f"/legal_tuples/{index}"


def error_code_only_reported_by_an_unreachable_transition(doc: Document) -> tuple[str, str]:
    doc["guard_refusals"] = [r for r in doc["guard_refusals"] if r["code"] != "REST_DELIVERY_INTENT_CONFLICT"]
    return "failure_reachability", "/stable_error_codes"


# --- structure rules ---------------------------------------------------------------------------

def tuple_name_twice(doc: Document) -> tuple[str, str]:
    doc["legal_tuples"].append({**tuple_entry(doc, "sealed"), "verification_state": "PASSED"})
    return "legal_tuples_well_formed", f"/legal_tuples/{len(doc['legal_tuples']) - 1}"


def tuple_axes_twice(doc: Document) -> tuple[str, str]:
    index = _add_tuple(doc, "sealed", "sealed_alias")
    return "legal_tuples_well_formed", f"/legal_tuples/{index}"


def initial_not_legal(doc: Document) -> tuple[str, str]:
    doc["initial"] = "no_such_tuple"
    return "initial_tuple_legal", "/initial"


def initial_wrong_axes(doc: Document) -> tuple[str, str]:
    doc["initial"] = "sealed"
    return "initial_tuple_legal", "/initial"


def transition_unknown_source(doc: Document) -> tuple[str, str]:
    index = _add_transition(doc, "ghost", "no_such_tuple", "sealed")
    return "transition_endpoints_legal", f"/transitions/{index}/from"


def transition_unknown_target(doc: Document) -> tuple[str, str]:
    index = _add_transition(doc, "ghost", "sealed", "no_such_tuple")
    return "transition_endpoints_legal", f"/transitions/{index}/to"


def transition_id_twice_from_one_source(doc: Document) -> tuple[str, str]:
    index = _add_transition(doc, "plan_sealed", "planned", "submitting")
    return "transition_endpoints_legal", f"/transitions/{index}"


def second_transition_for_one_pair(doc: Document) -> tuple[str, str]:
    index = _add_transition(doc, "plan_sealed_again", "planned", "sealed")
    return "transition_endpoints_legal", f"/transitions/{index}"


def self_loop(doc: Document) -> tuple[str, str]:
    index = _add_transition(doc, "stay", "sealed", "sealed")
    return "transition_endpoints_legal", f"/transitions/{index}"


def predicate_declared_twice(doc: Document) -> tuple[str, str]:
    doc["cas_predicates"].append(dict(doc["cas_predicates"][0]))
    return "cas_preconditions", "/cas_predicates"


def transition_without_revision_cas(doc: Document) -> tuple[str, str]:
    t = transition(doc, "plan_sealed", "planned")
    t["cas_preconditions"].remove("revision_matches")
    return "cas_preconditions", f"/transitions/{_transition_index(doc, 'plan_sealed', 'planned')}/cas_preconditions"


def transition_without_revision_advance(doc: Document) -> tuple[str, str]:
    transition(doc, "submit_started", "sealed")["advances"].remove("revision")
    return "cas_preconditions", f"/transitions/{_transition_index(doc, 'submit_started', 'sealed')}/advances"


def undeclared_precondition(doc: Document) -> tuple[str, str]:
    transition(doc, "plan_sealed", "planned")["cas_preconditions"].append("moon_is_full")
    return "cas_preconditions", f"/transitions/{_transition_index(doc, 'plan_sealed', 'planned')}/cas_preconditions"


def _without_monotonic(name: str) -> Case:
    def edit(doc: Document) -> tuple[str, str]:
        doc["monotonic_fields"] = [f for f in doc["monotonic_fields"] if f["name"] != name]
        return "monotonic_fields", "/monotonic_fields"
    edit.__name__ = f"monotonic_without_{name}"
    return edit


def monotonic_listed_twice(doc: Document) -> tuple[str, str]:
    doc["monotonic_fields"].append(dict(doc["monotonic_fields"][0]))
    return "monotonic_fields", "/monotonic_fields"


def advances_undeclared_field(doc: Document) -> tuple[str, str]:
    transition(doc, "plan_sealed", "planned")["advances"].append("mood")
    return "monotonic_fields", f"/transitions/{_transition_index(doc, 'plan_sealed', 'planned')}/advances"


def full_effect_without_watermark(doc: Document) -> tuple[str, str]:
    t = transition(doc, "verified_full", "verifying_succeeded")
    t["advances"].remove("highest_applied_generation")
    return "monotonic_fields", f"/transitions/{_transition_index(doc, t['id'], t['from'])}/advances"


def promotion_without_frontier(doc: Document) -> tuple[str, str]:
    t = transition(doc, "checkpoint_promoted", "finalized_not_accepted_full_eligible")
    t["advances"].remove("checkpoint_frontier")
    return "monotonic_fields", f"/transitions/{_transition_index(doc, t['id'], t['from'])}/advances"


def code_listed_but_not_catalogued(doc: Document) -> tuple[str, str]:
    doc["error_catalog"].pop("REST_DELIVERY_INTENT_CONFLICT")
    return "error_catalog", "/stable_error_codes"


def code_unknown_to_runtime(doc: Document) -> tuple[str, str]:
    doc["stable_error_codes"].remove("REST_DELIVERY_INTENT_CONFLICT")
    doc["error_catalog"].pop("REST_DELIVERY_INTENT_CONFLICT")
    return "error_catalog", "/error_catalog"


def catalog_metadata_differs(doc: Document) -> tuple[str, str]:
    doc["error_catalog"]["REST_DELIVERY_INTENT_CONFLICT"]["operator_action"] = "Retry later."
    return "error_catalog", "/error_catalog/REST_DELIVERY_INTENT_CONFLICT"


def unresolved_code_in_text(doc: Document) -> tuple[str, str]:
    doc["invariants"][0]["statement"] += " See REST_DELIVERY_NO_SUCH_CODE."
    return "error_references", "/invariants/0/statement"


def guard_refusal_blocks_unknown_transition(doc: Document) -> tuple[str, str]:
    doc["guard_refusals"][0]["blocks"].append("no_such_transition")
    return "error_references", "/guard_refusals/0/blocks"


def _identity_index(doc: Document, name: str) -> int:
    return next(i for i, e in enumerate(doc["identities"]["entries"]) if e["name"] == name)


def identity_defined_twice(doc: Document) -> tuple[str, str]:
    doc["identities"]["entries"].append(dict(doc["identities"]["entries"][0]))
    return "identities", f"/identities/entries/{len(doc['identities']['entries']) - 1}"


def identity_hashes_itself(doc: Document) -> tuple[str, str]:
    index = _identity_index(doc, "operation_namespace")
    doc["identities"]["entries"][index]["inputs"].append("operation_namespace")
    return "identities", f"/identities/entries/{index}"


def identity_used_before_defined(doc: Document) -> tuple[str, str]:
    index = _identity_index(doc, "operation_namespace")
    doc["identities"]["entries"][index]["inputs"].append("delivery_key")
    return "identities", f"/identities/entries/{index}"


def fence_with_other_inputs(doc: Document) -> tuple[str, str]:
    doc["identities"]["entries"][_identity_index(doc, "receiver_mutation_key")]["inputs"].append("tenant_id")
    return "identities", "/identities/entries"


def fence_missing(doc: Document) -> tuple[str, str]:
    doc["identities"]["entries"].pop(_identity_index(doc, "receiver_mutation_key"))
    return "identities", "/identities/entries"


def delivery_key_with_payload(doc: Document) -> tuple[str, str]:
    doc["identities"]["entries"][_identity_index(doc, "delivery_key")]["inputs"].append("payload_bytes")
    return "identities", "/identities/entries"


def delivery_key_with_a_digest(doc: Document) -> tuple[str, str]:
    doc["identities"]["entries"][_identity_index(doc, "delivery_key")]["inputs"].append("content_digest")
    return "identities", "/identities/entries"


def delivery_key_missing(doc: Document) -> tuple[str, str]:
    doc["identities"]["entries"][_identity_index(doc, "delivery_key")]["name"] = "logical_key"
    return "identities", "/identities/entries"


def invariant_twice(doc: Document) -> tuple[str, str]:
    doc["invariants"].append(dict(doc["invariants"][0]))
    return "named_entries_unique", "/invariants"


def forbidden_twice(doc: Document) -> tuple[str, str]:
    doc["forbidden_combinations"].append(dict(doc["forbidden_combinations"][0]))
    return "named_entries_unique", "/forbidden_combinations"


def axis_out_of_order(doc: Document) -> tuple[str, str]:
    values = doc["axes"]["checkpoint_state"]
    values[0], values[-1] = values[-1], values[0]
    return "axes_match_state_enums", "/axes/checkpoint_state"


CASES: list[Case] = [
    unreachable_tuple, terminal_not_legal, terminal_not_finalized, automatic_exit_from_terminal,
    finalized_exit_that_is_not_promotion, finalized_exit_that_demotes, finalized_without_exit_not_terminal,
    dead_end, terminal_acknowledgement_changed, reconciliation_changes_acknowledgement, acknowledgement_moves_back,
    checkpoint_without_passed, promoted_without_full, finalized_running, unknown_running, unknown_relaxed,
    failed_verification_upgraded, not_provable_verification_upgraded, retry_without_not_started_proof,
    retry_without_budget, retry_wait_from_accepted, retry_wait_with_an_effect, submit_from_waiting,
    submit_with_an_effect, submit_without_attempt_ordinal, *(_without_guard(g) for g in sorted(SUBMIT_GUARDS)),
    no_reachable_retry_wait, forbidden_match, forbidden_unless_not_met,
    error_code_only_reported_by_an_unreachable_transition,
    tuple_name_twice, tuple_axes_twice, initial_not_legal, initial_wrong_axes, transition_unknown_source,
    transition_unknown_target, transition_id_twice_from_one_source, second_transition_for_one_pair, self_loop,
    predicate_declared_twice, transition_without_revision_cas, transition_without_revision_advance,
    undeclared_precondition, *(_without_monotonic(n) for n in REQUIRED_MONOTONIC_FIELDS), monotonic_listed_twice,
    advances_undeclared_field, full_effect_without_watermark, promotion_without_frontier,
    code_listed_but_not_catalogued, code_unknown_to_runtime, catalog_metadata_differs, unresolved_code_in_text,
    guard_refusal_blocks_unknown_transition, identity_defined_twice, identity_hashes_itself,
    identity_used_before_defined, fence_with_other_inputs, fence_missing, delivery_key_with_payload,
    delivery_key_with_a_digest, delivery_key_missing, invariant_twice, forbidden_twice, axis_out_of_order,
]


def test_the_bundled_contract_reports_nothing() -> None:
    assert _found(bundled_document()) == set()


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_each_rule_branch_reports_its_finding(case: Case) -> None:
    doc = bundled_document()
    rule, location = case(doc)[:2]
    found = _found(doc)
    assert (rule, location) in found, sorted(found)
    assert "schema" not in {r for r, _ in found}, "the edit must break a semantic rule, not the schema"


def test_the_model_wide_submit_guards_are_the_seeds() -> None:
    assert {
        "journal_epoch_open", "mutation_lease_held", "generation_admissible", "may_attempt_marker_durable",
        "capacity_reserved"} == SUBMIT_GUARDS
    assert set(REQUIRED_MONOTONIC_FIELDS) == {
        "revision", "journal_epoch", "attempt_ordinal", "observation_ordinal", "correction_revision",
        "highest_applied_generation", "checkpoint_frontier"}
