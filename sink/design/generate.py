"""Derives the state section of sink/design/contract.yaml from the rules of the seed "Outcome model".

The YAML file is the authority that runtime code and the validator read; this module only
records, as code a reviewer can read, how the exhaustive tuple and transition lists were derived
so that they are not hand-copied 150 times. ``python -m sink.design.generate`` prints the
document; a test keeps the committed file identical to that output.
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from sink.contracts.errors import ERROR_CATALOG
from sink.contracts.state import AXES
from sink.design.contract_text import (
    CAS_PREDICATES,
    FORBIDDEN_COMBINATIONS,
    GUARD_REFUSALS,
    HEADER,
    IDENTITIES,
    INVARIANTS,
    MONOTONIC_FIELDS,
)

CONTRACT_ID = "restproof.rest-bulk-delivery-design.v1"

# (execution, effect, acknowledgement, verification, checkpoint)
Axes = tuple[str, str, str, str, str]

TERMINAL_ACKS = ("SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED", "PROTOCOL_UNKNOWN")
FINAL_ACKS = ("NOT_ACCEPTED", "ACCEPTED", *TERMINAL_ACKS)

# Resolution outcomes of a verified or reconciled operation: name -> (effect, verification, checkpoint).
# verification PASSED means the expected delivery was proven; FAILED means verification ran and
# proved it absent, incomplete or contradictory; NOT_PROVABLE means no proof could be obtained.
OUTCOMES: dict[str, tuple[str, str, str]] = {
    "no_effect": ("NONE_PROVEN", "FAILED", "BLOCKED"),
    "full_eligible": ("FULLY_APPLIED", "PASSED", "ELIGIBLE"),
    "partial_failed": ("PARTIALLY_APPLIED", "FAILED", "BLOCKED"),
    "partial_not_provable": ("PARTIALLY_APPLIED", "NOT_PROVABLE", "BLOCKED"),
    "unknown_failed": ("UNKNOWN", "FAILED", "BLOCKED"),
    "unknown_not_provable": ("UNKNOWN", "NOT_PROVABLE", "BLOCKED"),
}
OUTCOME_ERRORS: dict[str, list[str]] = {
    "no_effect": [],
    "full_eligible": [],
    "partial_failed": ["REST_DELIVERY_PARTIALLY_APPLIED"],
    "partial_not_provable": ["REST_DELIVERY_PARTIALLY_APPLIED"],
    "unknown_failed": ["REST_DELIVERY_COUNT_MISMATCH"],
    "unknown_not_provable": ["REST_DELIVERY_REMOTE_EFFECT_UNKNOWN"],
}
OUTCOME_TRANSITION_SUFFIX = {
    "no_effect": "no_effect",
    "full_eligible": "full",
    "partial_failed": "partial",
    "partial_not_provable": "partial_not_provable",
    "unknown_failed": "contradictory",
    "unknown_not_provable": "not_provable",
}


def _outcomes_for(ack: str) -> list[str]:
    # A success acknowledgement with no effect at all would contradict the receipt itself; the
    # seed lists FULLY_APPLIED, PARTIALLY_APPLIED and UNKNOWN as the success resolutions.
    return [name for name in OUTCOMES if not (ack == "SUCCEEDED" and name == "no_effect")]


class _Builder:
    def __init__(self) -> None:
        self.tuples: dict[str, Axes] = {}
        self.descriptions: dict[str, str] = {}
        self.transitions: list[dict[str, Any]] = []

    def add_tuple(self, name: str, axes: Axes, description: str) -> str:
        self.tuples[name] = axes
        self.descriptions[name] = description
        return name

    def move(
        self,
        tid: str,
        source: str,
        target: str,
        kind: str,
        pre: list[str],
        *,
        advances: tuple[str, ...] = (),
        errors: list[str] | None = None,
    ) -> None:
        entry: dict[str, Any] = {
            "id": tid,
            "from": source,
            "to": target,
            "kind": kind,
            "cas_preconditions": ["revision_matches", *pre],
            "advances": ["revision", *advances],
        }
        if errors:
            entry["error_codes"] = list(errors)
        self.transitions.append(entry)


def _lower(value: str) -> str:
    return value.lower()


def _final_name(ack: str, outcome: str) -> str:
    return f"finalized_{_lower(ack)}_{outcome}"


def _build() -> _Builder:
    b = _Builder()
    nr = ("NOT_RUN", "BLOCKED")
    b.add_tuple("planned", ("PLANNED", "NONE_PROVEN", "NOT_ACCEPTED", *nr), "Plan compiled; nothing sealed or sent.")
    b.add_tuple("sealed", ("SEALED", "NONE_PROVEN", "NOT_ACCEPTED", *nr),
            "Payload sealed and the complete parent/child topology admitted; no request sent.")
    b.add_tuple("submitting", ("SUBMITTING", "UNDETERMINED", "NOT_ACCEPTED", *nr),
            "Attempt row, MAY_ATTEMPT marker and capacity committed; a request may be on the wire, "
            "so the stored effect is UNDETERMINED, never proof of absence.")
    b.add_tuple("retry_wait", ("RETRY_WAIT", "NONE_PROVEN", "NOT_ACCEPTED", *nr),
            "Transport proved REQUEST_NOT_STARTED; waiting for the next attempt within budget.")
    for execution in ("ACCEPTED", "WAITING"):
        for ack in ("ACCEPTED", "RUNNING"):
            b.add_tuple(f"{_lower(execution)}_ack_{_lower(ack)}", (execution, "UNDETERMINED", ack, *nr),
                    "Receipt durable; " + ("continuation returned, polling the receipt."
                                           if execution == "WAITING" else "pending continuation not yet returned."))
    for ack in TERMINAL_ACKS:
        b.add_tuple(f"verifying_{_lower(ack)}", ("VERIFYING", "UNDETERMINED", ack, *nr),
                f"Terminal acknowledgement {ack} observed; the verification contract derives the effect.")
    for effect, label in (("UNKNOWN", "unknown"), ("PARTIALLY_APPLIED", "partial")):
        for ack in FINAL_ACKS:
            b.add_tuple(f"reconciling_{label}_{_lower(ack)}", ("VERIFYING", effect, ack, *nr),
                    f"Operator reconciliation of a finalized {label} effect; acknowledgement {ack} preserved.")
    for ack in FINAL_ACKS:
        if ack == "NOT_ACCEPTED":
            b.add_tuple(_final_name(ack, "not_started"), ("FINALIZED", "NONE_PROVEN", ack, *nr),
                    "final_not_started: no request byte reached the receiver and automatic retry is "
                    "unavailable, exhausted or abandoned.")
            b.add_tuple(_final_name(ack, "outcome_lost"), ("FINALIZED", "UNKNOWN", ack, *nr),
                    "The request may have reached the receiver and no certified fence permits replay.")
        for outcome in _outcomes_for(ack):
            effect, verification, checkpoint = OUTCOMES[outcome]
            b.add_tuple(_final_name(ack, outcome), ("FINALIZED", effect, ack, verification, checkpoint),
                    f"Finalized: acknowledgement {ack}, effect {effect}, verification {verification}.")
        b.add_tuple(_final_name(ack, "full_promoted"), ("FINALIZED", "FULLY_APPLIED", ack, "PASSED", "PROMOTED"),
                f"Finalized full effect (acknowledgement {ack}); source checkpoint promoted.")
    _pre_transport(b)
    _observation(b)
    _verification_and_reconciliation(b)
    return b


def _pre_transport(b: _Builder) -> None:
    not_started = _final_name("NOT_ACCEPTED", "not_started")
    auto = "automatic"
    b.move("plan_sealed", "planned", "sealed", auto, ["payload_sealed", "parent_topology_admitted"])
    b.move("plan_rejected", "planned", not_started, auto, ["admission_refusal_recorded"],
           errors=["REST_DELIVERY_SCOPE_EXCEEDS_LIMIT"])
    submit_guards = ["journal_epoch_open", "mutation_lease_held", "generation_admissible",
                     "may_attempt_marker_durable", "capacity_reserved"]
    b.move("submit_started", "sealed", "submitting", auto, submit_guards, advances=("attempt_ordinal",))
    b.move("admission_refused", "sealed", not_started, auto, ["admission_refusal_recorded"],
           errors=["REST_DELIVERY_STALE_GENERATION", "REST_DELIVERY_APPEND_SCOPE_ALREADY_APPLIED"])
    b.move("request_not_started_retry", "submitting", "retry_wait", auto,
           ["mutation_lease_held", "request_not_started_proven", "retry_budget_remaining",
            "retry_after_within_budget"])
    b.move("request_not_started_final", "submitting", not_started, auto,
           ["request_not_started_proven", "retry_unavailable"],
           errors=["REST_DELIVERY_RETRY_AFTER_EXCEEDS_BUDGET"])
    b.move("retry_due", "retry_wait", "submitting", auto,
           ["retry_time_reached", "delivery_key_unchanged", *submit_guards], advances=("attempt_ordinal",))
    b.move("retry_abandoned", "retry_wait", not_started, auto, ["retry_unavailable"],
           errors=["REST_DELIVERY_RETRY_AFTER_EXCEEDS_BUDGET"])
    b.move("request_outcome_unknown", "submitting", _final_name("NOT_ACCEPTED", "outcome_lost"), auto,
           ["transport_evidence_classified"],
           errors=["REST_DELIVERY_REMOTE_EFFECT_UNKNOWN", "REST_DELIVERY_UNSAFE_RETRY",
                   "REST_DELIVERY_RETRY_AFTER_EXCEEDS_BUDGET"])


def _observation(b: _Builder) -> None:
    auto = "automatic"
    b.move("receipt_accepted", "submitting", "accepted_ack_accepted", auto,
           ["mutation_lease_held", "receipt_durable"])
    b.move("receipt_running", "submitting", "accepted_ack_running", auto,
           ["mutation_lease_held", "receipt_durable"])
    b.move("sync_response_succeeded", "submitting", "verifying_succeeded", auto,
           ["mutation_lease_held", "terminal_observation_durable"])
    b.move("sync_response_failed", "submitting", "verifying_failed", auto,
           ["mutation_lease_held", "terminal_observation_durable"])
    b.move("sync_response_unclassified", "submitting", "verifying_protocol_unknown", auto,
           ["mutation_lease_held", "terminal_observation_durable"], errors=["REST_DELIVERY_PROTOCOL_UNKNOWN"])
    for ack in ("accepted", "running"):
        b.move("continuation_pending", f"accepted_ack_{ack}", f"waiting_ack_{ack}", auto, ["next_check_durable"])
        source = f"waiting_ack_{ack}"
        for observed in TERMINAL_ACKS:
            errors = {"EXPIRED": ["REST_DELIVERY_RECEIPT_EXPIRED"],
                      "PROTOCOL_UNKNOWN": ["REST_DELIVERY_PROTOCOL_UNKNOWN"]}.get(observed)
            b.move(f"poll_observed_{_lower(observed)}", source, f"verifying_{_lower(observed)}", auto,
                   ["observation_lease_held", "terminal_observation_durable"],
                   advances=("observation_ordinal",), errors=errors)
    b.move("poll_observed_running", "waiting_ack_accepted", "waiting_ack_running", auto,
           ["observation_lease_held", "next_check_durable"], advances=("observation_ordinal",))
    b.move("observation_deadline_exceeded", "waiting_ack_accepted",
           _final_name("ACCEPTED", "unknown_not_provable"), auto,
           ["observation_lease_held", "observation_deadline_passed"],
           errors=["REST_DELIVERY_REMOTE_EFFECT_UNKNOWN"])


def _errors(ack: str, outcome: str) -> list[str] | None:
    """An unknown effect behind an expired receipt reports the expiry (seed: "Receipt expiry: retain
    effect as unknown"; the catalog's action for it is a query by delivery key)."""
    errors = list(OUTCOME_ERRORS[outcome])
    if ack == "EXPIRED" and outcome in ("unknown_failed", "unknown_not_provable"):
        errors.append("REST_DELIVERY_RECEIPT_EXPIRED")
    return errors or None


def _verification_and_reconciliation(b: _Builder) -> None:
    for ack in TERMINAL_ACKS:
        for outcome in _outcomes_for(ack):
            advances = ("highest_applied_generation",) if outcome == "full_eligible" else ()
            b.move(f"verified_{OUTCOME_TRANSITION_SUFFIX[outcome]}", f"verifying_{_lower(ack)}",
                   _final_name(ack, outcome), "automatic", ["verification_evidence_durable"],
                   advances=advances, errors=_errors(ack, outcome))
    operator_guards = ["operator_authority_audited", "reconciliation_lease_held", "expected_digests_match"]
    for ack in FINAL_ACKS:
        b.move("checkpoint_promoted", _final_name(ack, "full_eligible"), _final_name(ack, "full_promoted"),
               "automatic", ["checkpoint_lease_held", "frontier_contiguous"], advances=("checkpoint_frontier",))
        for effect_label in ("unknown", "partial"):
            target = f"reconciling_{effect_label}_{_lower(ack)}"
            sources = [f"{effect_label}_failed", f"{effect_label}_not_provable"]
            if ack == "NOT_ACCEPTED" and effect_label == "unknown":
                sources.append("outcome_lost")
            for source in sources:
                b.move("reconciliation_opened", _final_name(ack, source), target, "operator_only",
                       [*operator_guards, "new_reconciliation_id"])
            for outcome in _outcomes_for(ack):
                advances = ("highest_applied_generation",) if outcome == "full_eligible" else ()
                b.move(f"reconciled_{OUTCOME_TRANSITION_SUFFIX[outcome]}", target, _final_name(ack, outcome),
                       "operator_only", [*operator_guards, "new_evidence_digest"], advances=advances,
                       errors=_errors(ack, outcome))
            if ack == "NOT_ACCEPTED" and effect_label == "unknown":
                # Seed ("Safe retry"): a read-only query proving exact absence permits a retry. Only
                # a request that was never accepted can be sent again: an accepted one keeps its
                # acknowledgement, and a resend would be a second job.
                b.move("reconciled_absence_proven", target, "retry_wait", "operator_only",
                       [*operator_guards, "new_evidence_digest", "exact_absence_proven",
                        "retry_budget_remaining"])


def build_document() -> dict[str, Any]:
    """The complete contract document, in the key order of the committed YAML."""
    b = _build()
    legal = []
    for name, axes in b.tuples.items():
        entry: dict[str, Any] = {"name": name}
        entry.update({axis: value for (axis, _), value in zip(AXES, axes, strict=True)})
        entry["description"] = b.descriptions[name]
        legal.append(entry)
    automatic_sources = {t["from"] for t in b.transitions if t["kind"] == "automatic"}
    terminal = [name for name, axes in b.tuples.items()
                if axes[0] == "FINALIZED" and name not in automatic_sources]
    catalog = {
        code.value: {
            "exit_class": int(spec.exit_class),
            "exit_class_name": spec.exit_class.name,
            "retryability": spec.retryability.value,
            "operator_action": spec.operator_action,
            "severity": spec.severity.value,
            "evidence": spec.evidence.value,
        }
        for code, spec in ERROR_CATALOG.items()
    }
    return {
        "contract_id": CONTRACT_ID,
        "contract_version": 1,
        "identities": IDENTITIES,
        "invariants": INVARIANTS,
        "axes": {axis: [member.value for member in enum] for axis, enum in AXES},
        "initial": "planned",
        "legal_tuples": legal,
        "terminal_tuples": terminal,
        "cas_predicates": CAS_PREDICATES,
        "transitions": b.transitions,
        "monotonic_fields": MONOTONIC_FIELDS,
        "forbidden_combinations": FORBIDDEN_COMBINATIONS,
        "guard_refusals": GUARD_REFUSALS,
        "stable_error_codes": [code.value for code in ERROR_CATALOG],
        "error_catalog": catalog,
    }


class _ContractDumper(yaml.SafeDumper):
    """Block mappings everywhere; lists of scalars in flow style so a tuple list stays on one line."""


def _represent_dict(dumper: yaml.SafeDumper, data: dict[str, Any]) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=False)


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flat = all(not isinstance(item, dict | list) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_ContractDumper.add_representer(dict, _represent_dict)
_ContractDumper.add_representer(list, _represent_list)


def render() -> str:
    body = yaml.dump(build_document(), Dumper=_ContractDumper, sort_keys=False, width=100,
                     allow_unicode=False)
    return HEADER + body


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
