"""JSON and text views of the runtime's typed results: the only place they become documents.

The JSON result of ``delivery run`` / ``resume`` keeps a stable core (``parent_id``, ``exit_code``,
``children[]`` with ``operation_id``, ``ordinal``, ``status``, ``scope.start/end``, the five
``axes``, ``error_code``, ``exit_class``) and adds the typed outcome, reasons, next-check times and
the next commands an operator may run, each one a ``delivery`` command that exists, spelled out
with the same state location (a DSN is shown without its credentials).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the views are called with results the command's sink imports made (see sink.cli.common)
    from sink.contracts.results import ChildResult
    from sink.journal.records import Attempt
    from sink.runtime.operator_decisions import DecisionReport
    from sink.runtime.outcome import RouteResult
    from sink.runtime.reconcile import ReconcileReport
    from sink.runtime.service import DeliverySkipped, InspectionResult

RESULT_SCHEMA = "restproof.delivery_result.v1"
INSPECT_SCHEMA = "restproof.delivery_inspection.v1"
RECONCILE_SCHEMA = "restproof.delivery_reconciliation.v1"
DECISION_SCHEMA = "restproof.operator_decision.v1"


@dataclass(frozen=True, slots=True)
class CommandContext:
    """What the printed next commands need: where the state is, and the workload when known."""

    where: tuple[str, ...]
    workload: str | None = None
    credential_ref: str | None = None
    """The binding's credential reference (a reference, never a value), to name what is missing."""


LOCAL_CAUSES = {
    "credential_unavailable": "the credential {ref} could not be resolved (its value is never shown); nothing "
                              "was sent: provide it and run again",
    "body_unavailable": "the sealed payload could not be read from the artifact store; nothing was sent",
    "authority_refused": "the binding's authority is refused by its network policy; nothing was sent",
    "redirect_refused": "the receiver redirected to another authority, which is refused; nothing was sent",
}


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def next_commands(child: ChildResult, parent_id: str, context: CommandContext, scope: tuple[str, str],
                  correction_revision: int) -> list[str]:
    from sink.contracts.results import OperatorAction  # noqa: PLC0415 - start-up cost

    where = " ".join(context.where)
    commands = []
    for action in child.allowed_operator_actions:
        if action is OperatorAction.INSPECT:
            commands.append(f"delivery inspect --operation-id {parent_id} {where}")
        elif action is OperatorAction.RESUME:
            commands.append(f"delivery resume --operation-id {parent_id} --apply {where}")
        elif action is OperatorAction.RECONCILE:
            commands.append(f"delivery reconcile --operation-id {child.operation_id} --apply {where}")
        elif action is OperatorAction.ABANDON:
            commands.append(f"delivery abandon --operation-id {child.operation_id} --apply {where}")
        elif action is OperatorAction.TRANSFER_CAPACITY:
            commands.append(f"delivery transfer-capacity --operation-id {child.operation_id} --apply {where}")
        elif action is OperatorAction.RETIRE_ORPHAN_MARKER:
            commands.append(f"delivery retire-marker --operation-id {child.operation_id} --attempt <ordinal listed by "
                            f"inspect> --evidence '<what proves it had no effect>' --apply {where}")
        elif action is OperatorAction.CREATE_GOVERNED_GENERATION:
            commands.append(f"delivery run {context.workload or '<workload>'} --scope-from {scope[0][:10]} "
                            f"--scope-to {scope[1][:10]} --correction-revision {correction_revision + 1} {where}")
    return [command.strip() for command in commands]


def _child(child: ChildResult, parent_id: str, context: CommandContext, scope: tuple[str, str],
           revision: int) -> dict[str, Any]:
    return {
        "operation_id": child.operation_id,
        "ordinal": child.ordinal,
        "status": child.status.value,
        "axes": child.axes.model_dump(mode="json"),
        "error_code": None if child.error_code is None else child.error_code.value,
        "exit_class": int(child.exit_class),
        "reason": child.reason,
        "scope": {"start": child.scope_start, "end": child.scope_end},
        "receipt_id": child.receipt_id,
        "next_check_after": _time(child.next_check_after),
        "held_by": child.held_by,
        "capacity_held_by": list(child.capacity_held_by),
        "abandoned": child.abandoned,
        "allowed_next_actions": [action.value for action in child.allowed_operator_actions],
        "next_commands": next_commands(child, parent_id, context, scope, revision),
        "message": None if child.reason not in LOCAL_CAUSES else
        LOCAL_CAUSES[child.reason].format(ref=context.credential_ref or "of the binding"),
    }


def result_document(result: RouteResult, context: CommandContext, *, correction_revision: int = 0,
                    resumed: bool | None = None) -> dict[str, Any]:
    from sink.contracts.results import DeliveryBlocked, DeliveryPending  # noqa: PLC0415 - start-up cost

    scope = (min(c.scope_start for c in result.children), max(c.scope_end for c in result.children))
    document: dict[str, Any] = {
        "schema_id": RESULT_SCHEMA,
        "outcome": result.outcome,
        "parent_id": result.parent_id,
        "exit_code": int(result.exit_class),
        "children": [_child(c, result.parent_id, context, scope, correction_revision) for c in result.children],
        "frontier": None if result.frontier_order is None else {
            "frontier_order": result.frontier_order, "frontier_scope_end": result.frontier_scope_end},
    }
    if resumed is not None:
        document["resumed"] = resumed
    if isinstance(result, DeliveryPending):
        document.update(operation_id=result.operation_id, continuation_kind=result.continuation_kind,
                        next_check_after=_time(result.next_check_after))
    if isinstance(result, DeliveryBlocked):
        document.update(operation_id=result.operation_id, error_code=None if result.error_code is None
                        else result.error_code.value, reason=result.reason,
                        allowed_next_actions=[action.value for action in result.allowed_operator_actions])
    return document


def skipped_document(skipped: DeliverySkipped) -> dict[str, Any]:
    return {"schema_id": RESULT_SCHEMA, "outcome": "skipped", "parent_id": None, "exit_code": 0, "children": [],
            "reason": skipped.reason, "scope": {"from": skipped.scope_from.isoformat(),
                                                "to": skipped.scope_to.isoformat()},
            "message": "the interval has no source rows: skipped, nothing admitted or sent, the checkpoint "
                       "does not move"}


def _attempt(attempt: Attempt) -> dict[str, Any]:
    return {"ordinal": attempt.attempt_ordinal, "attempt_id": attempt.attempt_id,
            "created_at": attempt.created_at.isoformat(), "capacity_released": attempt.capacity_released}


def inspection_document(view: InspectionResult, context: CommandContext) -> dict[str, Any]:
    base = result_document(view.result, context)
    details = {detail.operation_id: detail for detail in view.details}
    for child in base["children"]:
        detail = details[child["operation_id"]]
        child.update(
            delivery_key=detail.delivery_key, frontier_order=detail.frontier_order, revision=detail.revision,
            payload_ref=detail.payload_ref, payload_digest=detail.payload_digest,
            mutation_intent_digest=detail.mutation_intent_digest, attempts=[_attempt(a) for a in detail.attempts],
            receipt=None if detail.receipt_digest is None else {
                "receipt_id": child["receipt_id"], "digest": detail.receipt_digest,
                "age_seconds": detail.receipt_age_seconds,
                "certified_ttl_horizon": _time(detail.receipt_ttl_horizon)},
            last_observation_age_seconds=detail.last_observation_age_seconds,
            operator_decisions=[{"kind": d.kind.value, "actor_id": d.actor_id, "reconciliation_id":
                                 d.reconciliation_id, "decided_at": d.decided_at.isoformat(),
                                 "released_attempts": list(d.released_attempts)} for d in detail.operator_decisions],
        )
    parent = view.parent
    base.update(schema_id=INSPECT_SCHEMA, parent_plan_digest=parent.parent_plan_digest, plan_ref=parent.plan_ref,
                profile_contract_digest=parent.profile_contract_digest, gate=view.gate_state,
                frontier={"frontier_order": parent.frontier_order, "frontier_scope_end": parent.frontier_scope_end},
                orphan_markers=[{"operation_id": o.operation_id, "attempt_ordinal": o.attempt_ordinal,
                                 "reason": o.reason} for o in view.orphan_markers])
    return base


def reconcile_document(report: ReconcileReport, context: CommandContext) -> dict[str, Any]:
    result = result_document(report.result, context)
    children = [{
        "operation_id": c.operation_id, "applied": c.applied, "proof": c.proof,
        "before": c.before.model_dump(mode="json"),
        "after": None if c.after is None else c.after.model_dump(mode="json"),
        "outcome": c.outcome, "reconciliation_id": c.reconciliation_id,
    } for c in report.children]
    return {"schema_id": RECONCILE_SCHEMA, "parent_id": report.parent_id, "applied": report.applied,
            "reconciled": children, "exit_code": result["exit_code"], "result": result,
            "children": result["children"]}


def decision_document(report: DecisionReport, context: CommandContext) -> dict[str, Any]:
    result = result_document(report.result, context)
    decision = "retire_marker" if report.kind is None else report.kind.value
    return {"schema_id": DECISION_SCHEMA, "operation_id": report.operation_id, "parent_id": report.parent_id,
            "decision": decision, "applied": report.applied, "reconciliation_id": report.reconciliation_id,
            "exit_code": result["exit_code"], "result": result, "children": result["children"]}


def render_text(document: dict[str, Any]) -> str:
    """Lines a person reads: the parent and every child with ids, then the next commands."""
    lines: list[str] = []
    if document.get("outcome") == "skipped":
        return f"skipped: {document['message']}\nexit 0\n"
    if "decision" in document:
        verb = "recorded" if document["applied"] else "would record (add --apply)"
        lines.append(f"{verb} {document['decision']} of {document['operation_id']}")
    for item in document.get("reconciled", []):
        after = item["after"]
        state = "" if after is None else f" -> {after['execution_state']} {after['remote_effect']}"
        verb = "reconciled" if item["applied"] else "would reconcile (add --apply)"
        lines.append(f"{verb} {item['operation_id']} (proof: {item['proof']}): {item['before']['remote_effect']}"
                     f"{state} {item['outcome'] or ''}".rstrip())
    result = document.get("result", document)
    code = f" {result.get('error_code')}" if result.get("error_code") else ""
    lines.append(f"parent {result['parent_id']}: {result['outcome']} (exit {result['exit_code']}){code}")
    commands: list[str] = []
    for child in result["children"]:
        error = f" {child['error_code']}" if child["error_code"] else ""
        reason = f" ({child['reason']})" if child["reason"] else ""
        lines.append(f"  child {child['ordinal']} {child['operation_id']} [{child['scope']['start'][:10]} .. "
                     f"{child['scope']['end'][:10]}): {child['status']} {child['axes']['remote_effect']}"
                     f"{error}{reason}")
        if child.get("message"):
            lines.append(f"    {child['message']}")
        if child.get("receipt"):
            receipt = child["receipt"]
            lines.append(f"    receipt {receipt['receipt_id']} age {receipt['age_seconds']}s, certified until "
                         f"{receipt['certified_ttl_horizon']}")
        if child["status"] != "completed":
            commands += [c for c in child["next_commands"] if c not in commands and " inspect " not in f" {c} "]
    if commands:
        lines.append("next:")
        lines += [f"  {command}" for command in commands]
    lines.append(f"exit {document['exit_code']}")
    return "\n".join(lines) + "\n"
