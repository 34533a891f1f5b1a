"""What an observer (the Airflow trigger) may apply: the observation-lease holder's transitions only.

Both asynchronous journal clients (SQLite and PostgreSQL) apply this one rule before a transition, so
a trigger can never verify, release capacity or raise the effect index: those stay the worker's.
"""

from __future__ import annotations

from sink.contracts.state import ExecutionState
from sink.design.query import Transition
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import AxesState
from sink.journal.transition_policy import raises_effect_index, releases_capacity

OBSERVATION_LEASE = "observation_lease_held"


def require_observer_transition(source: AxesState, transition: Transition) -> None:
    """An observer applies only what the contract gives the observation-lease holder of a WAITING
    child (the ``poll_observed_*`` family and the observation deadline): never a verification, a
    capacity release or an effect-index raise, which stay the worker's."""
    if (source.execution_state is not ExecutionState.WAITING
            or OBSERVATION_LEASE not in transition.cas_preconditions
            or releases_capacity(transition.target) or raises_effect_index(source, transition.target)):
        raise TransitionRejected(RejectionReason.ILLEGAL_TRANSITION,
                                 f"transition {transition.id!r} is not an observer's to apply")
