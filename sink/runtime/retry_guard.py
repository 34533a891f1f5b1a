"""Is an automatic (re)submit of a mutation permitted? (seed: "Safe retry and remote fencing",
"Lease separation"; pseudocode ``retry_guard.assert_mutation_permitted``).

Two and only two kinds of proof permit sending a mutation request:

* **Proven absence, new attempt.** The operation is SEALED (nothing sent) or RETRY_WAIT (the
  journal holds durable REQUEST_NOT_STARTED proof, or an operator's certified proof of exact
  absence), its effect is NONE_PROVEN, and this wake-up's submit budget has an attempt left
  (``submit_retry.max_attempts`` attempts per run or resume: the orchestrator's retry is the next
  wake-up, never a new authority). This is the only path into a new attempt (``submit_started``
  or ``retry_due``), and ``reserve_and_mark_submitting`` enforces the same source states.
* **Certified fence, same attempt.** The profile's fence makes a same-key replay harmless
  (:func:`fence_permits_replay`) and the replay reaches the receiver while it still remembers the
  key. Either the worker executing the attempt, still holding its mutation lease, saw the request
  fail after bytes may have reached the receiver (:func:`may_replay_same_key`); or a recovering
  worker found the attempt SUBMITTING with its worker gone (the lease expired; it now holds it)
  and replays within the fence's retention measured from the attempt row's creation on the
  database clock (:func:`may_take_over`; seed: "may submit again only after exact absence is
  proven or a certified remote fence authorizes same-key replay"). The replay stays inside the
  SUBMITTING attempt (same attempt id, same marker, same key, same bytes) and makes no journal
  transition; the receiver's proven-duplicate answer then resolves it.

  When the live attempt's budget is spent (its replays, or this wake-up's time) while the key is
  still remembered, the attempt stays SUBMITTING for the next wake-up (:func:`may_defer_replay`):
  the same proof, less the budget. The worker releases its lease and the run returns pending; the
  next run or resume takes the attempt over and replays under :func:`may_take_over`, which checks
  the retention again on the database clock. A receiver that restarts after committing is thus
  finished by a later wake-up instead of being left UNKNOWN for an operator.

Everything else is refused with ``REST_DELIVERY_UNSAFE_RETRY``: an UNKNOWN or PARTIALLY_APPLIED
effect (only operator reconciliation refines it), any accepted/observed/finalized operation, and
a SUBMITTING attempt without a certified fence (lease expiry alone never authorises a resend: the
outcome is recorded as UNKNOWN, to be reconciled).

Pure: the caller passes the stored tuple and counters.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.profile import MutationFence, OperationProfile
from sink.contracts.state import ExecutionState, RemoteEffect, StateTuple

NEW_ATTEMPT_SOURCES = frozenset({ExecutionState.SEALED, ExecutionState.RETRY_WAIT})


class GuardReason(StrEnum):
    """Stable reasons (they appear in evidence and in ``delivery inspect``)."""

    FIRST_SUBMIT = "first_submit"
    REQUEST_NOT_STARTED_PROVEN = "request_not_started_proven"
    CERTIFIED_FENCE_REPLAY = "certified_fence_replay"
    BUDGET_EXHAUSTED = "budget_exhausted"
    EFFECT_NOT_PROVEN_ABSENT = "effect_not_proven_absent"
    NOT_A_SUBMIT_STATE = "not_a_submit_state"
    LEASE_EXPIRED_AFTER_SUBMITTING = "lease_expired_after_submitting"
    FENCE_NOT_CERTIFIED = "fence_not_certified"
    FENCE_RETENTION_EXCEEDED = "fence_retention_exceeded"
    TAKEOVER_FENCED_REPLAY = "takeover_fenced_replay"
    REPLAY_DEFERRED = "fenced_replay_deferred"


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    permitted: bool
    reason: GuardReason
    error_code: ErrorCode | None
    """UNSAFE_RETRY when sending would risk a second effect; None when permitted, or when only the
    budget is spent (then no automatic send remains: ``retry_abandoned`` from RETRY_WAIT, or the
    submit classification's UNKNOWN outcome after a lost response)."""


def fence_permits_replay(fence: MutationFence) -> bool:
    """A same-key replay is harmless only when the receiver deduplicates by the remote fence key
    (``receiver_mutation_key``, never a payload digest) AND binds that key to the payload, so a
    replay can never apply different content and the receiver's duplicate answer proves the same
    intent. The retention window is checked separately (:func:`fence_retention_ms`)."""
    return (
        fence.proven
        and fence.value_from == "receiver_mutation_key"
        and fence.key_payload_binding == "required"
        and fence.certification_ref is not None
    )


def fence_retention_ms(profile: OperationProfile) -> int:
    """How long the receiver certifiably remembers a fence key: the fence's own retention TTL, else
    the receipt retention (a receiver duplicate key lives at least as long as the receipt)."""
    ttl = profile.mutation_fence.retention_ttl_seconds
    return (ttl if ttl is not None else profile.retention.receipt_retention_seconds) * 1000


def _refused(reason: GuardReason, code: ErrorCode | None = ErrorCode.UNSAFE_RETRY) -> GuardVerdict:
    return GuardVerdict(permitted=False, reason=reason, error_code=code)


def may_start_attempt(current: StateTuple, *, attempts_used: int, max_attempts: int) -> GuardVerdict:
    """May the supervisor open a NEW attempt (``submit_started`` / ``retry_due``)?

    ``attempts_used``: the attempts this wake-up (one run or resume process) already made for the
    operation; the budget is ``max_attempts`` per wake-up."""
    if current.remote_effect is not RemoteEffect.NONE_PROVEN:
        return _refused(GuardReason.EFFECT_NOT_PROVEN_ABSENT)
    # Every legal SEALED / RETRY_WAIT tuple is NOT_ACCEPTED with nothing verified (the contract).
    if current.execution_state not in NEW_ATTEMPT_SOURCES:
        return _refused(GuardReason.NOT_A_SUBMIT_STATE)
    if attempts_used >= max_attempts:
        return _refused(GuardReason.BUDGET_EXHAUSTED, None)
    if current.execution_state is ExecutionState.SEALED:
        return GuardVerdict(True, GuardReason.FIRST_SUBMIT, None)
    return GuardVerdict(True, GuardReason.REQUEST_NOT_STARTED_PROVEN, None)


def may_defer_replay(
    current: StateTuple, *, profile: OperationProfile, live_attempt: bool, elapsed_since_first_send_ms: int,
) -> GuardVerdict:
    """May the live attempt stay SUBMITTING for a later wake-up to replay, now that only its budget
    is spent? Every proof a replay needs except the budget: a SUBMITTING attempt whose effect is
    not already unknown, made by this worker (``live_attempt``), under a certified payload-bound
    fence, and the key still remembered (``elapsed_since_first_send_ms`` strictly below the
    certified retention). The later takeover checks the retention again (:func:`may_take_over`)."""
    if current.remote_effect in (RemoteEffect.UNKNOWN, RemoteEffect.PARTIALLY_APPLIED):
        return _refused(GuardReason.EFFECT_NOT_PROVEN_ABSENT)
    if current.execution_state is not ExecutionState.SUBMITTING:
        return _refused(GuardReason.NOT_A_SUBMIT_STATE)
    if not live_attempt:
        return _refused(GuardReason.LEASE_EXPIRED_AFTER_SUBMITTING)
    if not fence_permits_replay(profile.mutation_fence):
        return _refused(GuardReason.FENCE_NOT_CERTIFIED)
    if elapsed_since_first_send_ms >= fence_retention_ms(profile):
        return _refused(GuardReason.FENCE_RETENTION_EXCEEDED)
    return GuardVerdict(True, GuardReason.REPLAY_DEFERRED, None)


def may_replay_same_key(
    current: StateTuple,
    *,
    profile: OperationProfile,
    sends_used: int,
    live_attempt: bool,
    elapsed_since_first_send_ms: int,
    delay_ms: int,
) -> GuardVerdict:
    """May the live attempt send the same request again under the certified fence?

    ``sends_used``: requests sent for the operation in this wake-up (each replay uses one unit of
    ``submit_retry.max_attempts``). ``live_attempt``: the caller is the worker that made this
    attempt and still holds its mutation lease. The replay must reach the receiver while it still
    remembers the key: ``elapsed_since_first_send_ms + delay_ms`` stays strictly below the
    certified retention. Only the budget refuses with BUDGET_EXHAUSTED (no error code): then
    :func:`may_defer_replay` decides whether a later wake-up may replay."""
    verdict = may_defer_replay(current, profile=profile, live_attempt=live_attempt,
                               elapsed_since_first_send_ms=elapsed_since_first_send_ms + delay_ms)
    if not verdict.permitted:
        return verdict
    if sends_used >= profile.submit_retry.max_attempts:
        return _refused(GuardReason.BUDGET_EXHAUSTED, None)
    return GuardVerdict(True, GuardReason.CERTIFIED_FENCE_REPLAY, None)


def may_take_over(current: StateTuple, *, profile: OperationProfile, attempt_age_ms: int) -> GuardVerdict:
    """May a recovering worker replay a SUBMITTING attempt whose worker is gone?

    The caller holds the attempt's mutation lease (the previous holder's expired on the database
    clock). ``attempt_age_ms``: database-clock time since the attempt row was created, an upper
    bound of the time since its first send; the replay must land strictly inside the fence's
    certified retention from then."""
    if current.remote_effect in (RemoteEffect.UNKNOWN, RemoteEffect.PARTIALLY_APPLIED):
        return _refused(GuardReason.EFFECT_NOT_PROVEN_ABSENT)
    if current.execution_state is not ExecutionState.SUBMITTING:
        return _refused(GuardReason.NOT_A_SUBMIT_STATE)
    if not fence_permits_replay(profile.mutation_fence):
        return _refused(GuardReason.FENCE_NOT_CERTIFIED)
    if attempt_age_ms < 0 or attempt_age_ms >= fence_retention_ms(profile):
        return _refused(GuardReason.FENCE_RETENTION_EXCEEDED)
    return GuardVerdict(True, GuardReason.TAKEOVER_FENCED_REPLAY, None)


class RetryBudgetExhausted(Exception):
    """Sending would be safe but this wake-up's submit budget is spent: the next wake-up retries."""

    def __init__(self, operation_id: str, what: str = "submit retry budget exhausted") -> None:
        super().__init__(f"operation {operation_id}: {what}")
        self.operation_id = operation_id


class ReplayDeferred(RetryBudgetExhausted):
    """The live attempt stays SUBMITTING under its certified fence: the next wake-up's takeover
    replays it (:func:`may_defer_replay`)."""

    def __init__(self, operation_id: str) -> None:
        super().__init__(operation_id, "same-key replay deferred to the next run or resume (budget spent)")


def assert_mutation_permitted(verdict: GuardVerdict, operation_id: str) -> None:
    """Raise unless ``verdict`` permits sending: ``DeliveryError`` with the catalogued code when
    sending could cause a second effect, ``RetryBudgetExhausted`` when only the budget is spent."""
    if verdict.permitted:
        return
    if verdict.error_code is None:
        raise RetryBudgetExhausted(operation_id)
    raise DeliveryError(verdict.error_code, f"operation {operation_id}: no automatic submit ({verdict.reason.value})")
