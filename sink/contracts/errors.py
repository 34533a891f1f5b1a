"""Stable error catalog (seed: "CLI and recovery").

Every ``REST_DELIVERY_*`` code maps to an exit class, a retryability class, the operator action
and a severity/evidence kind. The design contract (sink/design/contract.yaml) carries the same
catalog and the validator checks the two are the exact same set.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum


class ExitClass(IntEnum):
    """Process exit codes of every restproof CLI."""

    OK = 0
    INVALID_INPUT = 2
    UNAVAILABLE = 3
    EFFECT_UNKNOWN_OR_MANUAL = 4
    TERMINAL_RECEIVER_FAILURE = 5


class Retryability(StrEnum):
    NEVER = "never"
    RECONCILIATION_ONLY = "reconciliation_only"
    COMPENSATION_OR_RECONCILIATION_ONLY = "compensation_or_reconciliation_only"
    OBSERVATION_OR_RECONCILIATION_ONLY = "observation_or_reconciliation_only"
    BLOCKED = "blocked"


class Severity(StrEnum):
    WARNING = "warning"
    CRITICAL = "critical"


class EvidenceKind(StrEnum):
    OPERATION = "operation_evidence"
    RECONCILIATION = "reconciliation_evidence"
    EFFECT_TOMBSTONE = "effect_tombstone"


class ErrorCode(StrEnum):
    INTENT_CONFLICT = "REST_DELIVERY_INTENT_CONFLICT"
    REMOTE_EFFECT_UNKNOWN = "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN"
    PARTIALLY_APPLIED = "REST_DELIVERY_PARTIALLY_APPLIED"
    UNSAFE_RETRY = "REST_DELIVERY_UNSAFE_RETRY"
    SCOPE_EXCEEDS_LIMIT = "REST_DELIVERY_SCOPE_EXCEEDS_LIMIT"
    COUNT_MISMATCH = "REST_DELIVERY_COUNT_MISMATCH"
    RECEIPT_EXPIRED = "REST_DELIVERY_RECEIPT_EXPIRED"
    PROTOCOL_UNKNOWN = "REST_DELIVERY_PROTOCOL_UNKNOWN"
    STALE_GENERATION = "REST_DELIVERY_STALE_GENERATION"
    OVERLAPPING_EFFECT_IN_FLIGHT = "REST_DELIVERY_OVERLAPPING_EFFECT_IN_FLIGHT"
    RETRY_AFTER_EXCEEDS_BUDGET = "REST_DELIVERY_RETRY_AFTER_EXCEEDS_BUDGET"
    APPEND_SCOPE_ALREADY_APPLIED = "REST_DELIVERY_APPEND_SCOPE_ALREADY_APPLIED"
    JOURNAL_EPOCH_BLOCKED = "REST_DELIVERY_JOURNAL_EPOCH_BLOCKED"


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    code: ErrorCode
    exit_class: ExitClass
    retryability: Retryability
    operator_action: str
    severity: Severity
    evidence: EvidenceKind


_R = Retryability
_S = Severity
_E = EvidenceKind
_X = ExitClass

ERROR_CATALOG: dict[ErrorCode, ErrorSpec] = {
    spec.code: spec
    for spec in (
        ErrorSpec(ErrorCode.INTENT_CONFLICT, _X.INVALID_INPUT, _R.NEVER,
                  "Correct intent or create an explicit governed generation.", _S.WARNING, _E.OPERATION),
        ErrorSpec(ErrorCode.REMOTE_EFFECT_UNKNOWN, _X.EFFECT_UNKNOWN_OR_MANUAL, _R.RECONCILIATION_ONLY,
                  "Inspect immutable evidence and reconcile.", _S.CRITICAL, _E.RECONCILIATION),
        ErrorSpec(ErrorCode.PARTIALLY_APPLIED, _X.EFFECT_UNKNOWN_OR_MANUAL,
                  _R.COMPENSATION_OR_RECONCILIATION_ONLY,
                  "Reconcile or run the certified compensation contract.", _S.CRITICAL, _E.RECONCILIATION),
        ErrorSpec(ErrorCode.UNSAFE_RETRY, _X.EFFECT_UNKNOWN_OR_MANUAL, _R.NEVER,
                  "Reconcile the delivery key before any resend.", _S.CRITICAL, _E.RECONCILIATION),
        ErrorSpec(ErrorCode.SCOPE_EXCEEDS_LIMIT, _X.INVALID_INPUT, _R.NEVER,
                  "Shrink the scope or change the certified receiver atomicity contract.",
                  _S.WARNING, _E.OPERATION),
        ErrorSpec(ErrorCode.COUNT_MISMATCH, _X.EFFECT_UNKNOWN_OR_MANUAL, _R.RECONCILIATION_ONLY,
                  "Inspect receiver counts and reconcile effect.", _S.CRITICAL, _E.RECONCILIATION),
        ErrorSpec(ErrorCode.RECEIPT_EXPIRED, _X.EFFECT_UNKNOWN_OR_MANUAL, _R.RECONCILIATION_ONLY,
                  "Query by delivery key when certified or reconcile manually.", _S.WARNING,
                  _E.RECONCILIATION),
        ErrorSpec(ErrorCode.PROTOCOL_UNKNOWN, _X.EFFECT_UNKNOWN_OR_MANUAL, _R.RECONCILIATION_ONLY,
                  "Inspect protocol evidence and reconcile.", _S.CRITICAL, _E.RECONCILIATION),
        ErrorSpec(ErrorCode.STALE_GENERATION, _X.INVALID_INPUT, _R.NEVER,
                  "Inspect the newer overlapping generation.", _S.WARNING, _E.OPERATION),
        ErrorSpec(ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT, _X.EFFECT_UNKNOWN_OR_MANUAL,
                  _R.OBSERVATION_OR_RECONCILIATION_ONLY,
                  "Resolve or observe the older overlap.", _S.WARNING, _E.RECONCILIATION),
        ErrorSpec(ErrorCode.RETRY_AFTER_EXCEEDS_BUDGET, _X.EFFECT_UNKNOWN_OR_MANUAL, _R.BLOCKED,
                  "Extend the governed budget or wait for the server window.", _S.WARNING, _E.OPERATION),
        ErrorSpec(ErrorCode.APPEND_SCOPE_ALREADY_APPLIED, _X.INVALID_INPUT, _R.NEVER,
                  "Use an explicitly certified correction contract.", _S.WARNING, _E.EFFECT_TOMBSTONE),
        ErrorSpec(ErrorCode.JOURNAL_EPOCH_BLOCKED, _X.EFFECT_UNKNOWN_OR_MANUAL, _R.RECONCILIATION_ONLY,
                  "Complete restore reconciliation and approve the new epoch.", _S.CRITICAL,
                  _E.RECONCILIATION),
    )
}


class DeliveryError(Exception):
    """A failure with a stable catalog code. The message must never carry secrets or payload rows."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code
        self.detail = message

    @property
    def spec(self) -> ErrorSpec:
        return ERROR_CATALOG[self.code]

    @property
    def exit_class(self) -> ExitClass:
        return self.spec.exit_class
