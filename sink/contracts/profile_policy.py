"""Operation profile, execution-policy part: timeout vector, retry and poll budgets, rate limits,
retention and observability. These feed ``execution_policy_digest`` only: changing them within
certified bounds never changes operation semantics or mutation identity."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, model_validator

from sink.contracts._base import ContractModel, PositiveMillis, contract_error

TRANSPORT_PHASES = ("dns_ms", "connect_ms", "tls_ms", "write_ms", "read_ms", "idle_ms")


class TimeoutVector(ContractModel):
    """Each transport phase has its own bound so that timeouts classify distinctly (all in ms)."""

    dns_ms: PositiveMillis
    connect_ms: PositiveMillis
    tls_ms: PositiveMillis
    write_ms: PositiveMillis
    read_ms: PositiveMillis
    idle_ms: PositiveMillis
    request_total_ms: PositiveMillis
    operation_total_ms: PositiveMillis
    poll_interval_ms: PositiveMillis | None = None
    poll_retry_ms: PositiveMillis | None = None
    receiver_expiry_ms: PositiveMillis | None = None

    @model_validator(mode="after")
    def _ordered(self) -> TimeoutVector:
        for phase in TRANSPORT_PHASES:
            if getattr(self, phase) > self.request_total_ms:
                raise contract_error(
                    "contract.inconsistent_policy", "a phase timeout exceeds request_total_ms", field=phase
                )
        if self.request_total_ms > self.operation_total_ms:
            raise contract_error(
                "contract.inconsistent_policy", "request_total_ms exceeds operation_total_ms", field="request_total_ms"
            )
        if (
            self.poll_interval_ms is not None
            and self.receiver_expiry_ms is not None
            and self.poll_interval_ms >= self.receiver_expiry_ms
        ):
            raise contract_error(
                "contract.inconsistent_policy", "poll_interval_ms must be below receiver_expiry_ms",
                field="poll_interval_ms",
            )
        return self


class SubmitRetryBudget(ContractModel):
    """Budget for retries that a fence or REQUEST_NOT_STARTED proof already permits.

    Delay is full jitter in [0, min(max_delay_ms, initial_delay_ms * 2**attempt)]; a Retry-After
    longer than the remaining budget blocks (never truncated)."""

    max_attempts: StrictInt = Field(ge=1, le=10)
    initial_delay_ms: PositiveMillis
    max_delay_ms: PositiveMillis
    retry_after: Literal["honor_or_block"] = "honor_or_block"

    @model_validator(mode="after")
    def _ordered(self) -> SubmitRetryBudget:
        if self.initial_delay_ms > self.max_delay_ms:
            raise contract_error(
                "contract.inconsistent_policy", "initial_delay_ms exceeds max_delay_ms", field="initial_delay_ms"
            )
        return self


class PollBudget(ContractModel):
    """Read-only observation budget, separate from the submit budget."""

    max_observations: StrictInt = Field(ge=1, le=100_000)
    max_consecutive_errors: StrictInt = Field(ge=1, le=100)
    initial_delay_ms: PositiveMillis
    max_delay_ms: PositiveMillis

    @model_validator(mode="after")
    def _ordered(self) -> PollBudget:
        if self.initial_delay_ms > self.max_delay_ms:
            raise contract_error(
                "contract.inconsistent_policy", "initial_delay_ms exceeds max_delay_ms", field="initial_delay_ms"
            )
        return self


RateScope = Literal["endpoint", "principal", "tenant", "environment"]


class RateLimits(ContractModel):
    """Distributed limits, keyed by ``scope`` (never process-local)."""

    submit_per_minute: StrictInt = Field(ge=1, le=100_000)
    poll_per_minute: StrictInt = Field(ge=1, le=100_000)
    max_active_requests: StrictInt = Field(ge=1, le=1_000)
    max_active_remote_jobs: StrictInt = Field(ge=1, le=1_000)
    scope: tuple[RateScope, ...] = Field(min_length=1, max_length=4)

    @model_validator(mode="after")
    def _unique_scope(self) -> RateLimits:
        if len(set(self.scope)) != len(self.scope):
            raise contract_error("contract.duplicate_key", "a rate scope is listed twice", field="scope")
        return self


class RetentionPolicy(ContractModel):
    receipt_retention_seconds: StrictInt = Field(ge=1, le=366 * 24 * 3600)
    evidence_retention_days: StrictInt = Field(ge=1, le=3660)


class ObservabilityPolicy(ContractModel):
    max_evidence_scalar_bytes: StrictInt = Field(default=256, ge=16, le=4096)
    redaction: Literal["strict"] = "strict"
