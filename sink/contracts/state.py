"""The five independent outcome axes of one delivery operation (seed: "Outcome model").

Acknowledgement is never collapsed into effect: each axis is stored and moved on its own,
and only the tuples and transitions listed in the design contract (sink/design) are legal.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol


class Columns(Protocol):
    """Anything indexed by column name: a dict, a YAML mapping, a sqlite3.Row, a psycopg dict row."""

    def __getitem__(self, key: str, /) -> Any: ...


class ExecutionState(StrEnum):
    PLANNED = "PLANNED"
    SEALED = "SEALED"
    SUBMITTING = "SUBMITTING"
    RETRY_WAIT = "RETRY_WAIT"
    ACCEPTED = "ACCEPTED"
    WAITING = "WAITING"
    VERIFYING = "VERIFYING"
    FINALIZED = "FINALIZED"


class RemoteEffect(StrEnum):
    NONE_PROVEN = "NONE_PROVEN"
    UNDETERMINED = "UNDETERMINED"
    FULLY_APPLIED = "FULLY_APPLIED"
    PARTIALLY_APPLIED = "PARTIALLY_APPLIED"
    UNKNOWN = "UNKNOWN"


class AcknowledgementState(StrEnum):
    NOT_ACCEPTED = "NOT_ACCEPTED"
    ACCEPTED = "ACCEPTED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    EXPIRED = "EXPIRED"
    PROTOCOL_UNKNOWN = "PROTOCOL_UNKNOWN"


class VerificationState(StrEnum):
    NOT_RUN = "NOT_RUN"
    PASSED = "PASSED"
    FAILED = "FAILED"
    NOT_PROVABLE = "NOT_PROVABLE"


class CheckpointState(StrEnum):
    BLOCKED = "BLOCKED"
    ELIGIBLE = "ELIGIBLE"
    PROMOTED = "PROMOTED"


AXES: tuple[tuple[str, type[StrEnum]], ...] = (
    ("execution_state", ExecutionState),
    ("remote_effect", RemoteEffect),
    ("acknowledgement_state", AcknowledgementState),
    ("verification_state", VerificationState),
    ("checkpoint_state", CheckpointState),
)


@dataclass(frozen=True, slots=True)
class StateTuple:
    """One value of each axis: the unit the design contract lists as legal, initial or terminal."""

    execution_state: ExecutionState
    remote_effect: RemoteEffect
    acknowledgement_state: AcknowledgementState
    verification_state: VerificationState
    checkpoint_state: CheckpointState

    @classmethod
    def from_mapping(cls, entry: Columns) -> StateTuple:
        return cls(
            ExecutionState(entry["execution_state"]),
            RemoteEffect(entry["remote_effect"]),
            AcknowledgementState(entry["acknowledgement_state"]),
            VerificationState(entry["verification_state"]),
            CheckpointState(entry["checkpoint_state"]),
        )

    def as_dict(self) -> dict[str, str]:
        return {
            "execution_state": self.execution_state.value,
            "remote_effect": self.remote_effect.value,
            "acknowledgement_state": self.acknowledgement_state.value,
            "verification_state": self.verification_state.value,
            "checkpoint_state": self.checkpoint_state.value,
        }
