"""Delivery runtime: the pure decision policies the supervisor applies (issue 9).

Each policy lives in its own module and is pure: it reads evidence and the pinned profile and
answers with a decision; clocks and the jitter source are injected; nothing here performs I/O,
except ``failpoints``, whose one job is to kill the process at a named point.

Every state move a policy decides is a :class:`ContractMove`: a transition listed in the design
contract (``sink/design/contract.yaml``) from the operation's current tuple. A policy that asks for
a transition the contract does not list fails loudly (:class:`PolicyContractError`) instead of
letting the journal discover it later: the policy and the contract must never disagree.

The submodules are not imported here, so importing one policy never drags in another.
"""

from __future__ import annotations

from dataclasses import dataclass

from sink.contracts.errors import ERROR_CATALOG, ErrorCode, ExitClass
from sink.contracts.profile_ack import Extractor
from sink.contracts.state import StateTuple
from sink.contracts.transport import JsonScalar, ResponseEvidence
from sink.design.query import DesignContract, Transition

__all__ = ["ContractMove", "PolicyContractError", "plan_move", "scalar_of"]


class PolicyContractError(RuntimeError):
    """A policy decided a transition (or error code) the design contract does not list from the
    current tuple. A defect, never an input problem: the supervisor must stop, not guess."""


@dataclass(frozen=True, slots=True)
class ContractMove:
    """One design-contract transition the journal is asked to apply, with the stable error code
    it reports and the exit class of the resulting state when that state blocks delivery."""

    transition: Transition
    error_code: ErrorCode | None
    exit_class: ExitClass | None
    """None while the operation is still moving automatically (not blocked)."""

    @property
    def transition_id(self) -> str:
        return self.transition.id

    @property
    def source(self) -> StateTuple:
        return self.transition.source

    @property
    def target(self) -> StateTuple:
        return self.transition.target


def plan_move(
    contract: DesignContract,
    source: StateTuple,
    transition_id: str,
    *,
    error_code: ErrorCode | None = None,
    exit_class: ExitClass | None = None,
) -> ContractMove:
    """The listed transition ``transition_id`` from ``source``; the exit class defaults to the
    error code's catalog class. Raises PolicyContractError when the contract does not list the
    transition from ``source`` or does not let it report ``error_code``."""
    transition = contract.transition_by_id(transition_id, source)
    if transition is None:
        raise PolicyContractError(
            f"the design contract lists no transition {transition_id!r} from "
            f"{contract.name_of(source) or source.as_dict()}"
        )
    if error_code is not None and error_code not in transition.error_codes:
        raise PolicyContractError(f"transition {transition_id!r} does not report {error_code.value}")
    if exit_class is None and error_code is not None:
        exit_class = ERROR_CATALOG[error_code].exit_class
    return ContractMove(transition=transition, error_code=error_code, exit_class=exit_class)


def scalar_of(response: ResponseEvidence, extractor: Extractor) -> JsonScalar:
    """The bounded scalar a profile extractor names: a body JSON pointer (as the transport
    extracted it) or an allowlisted response header (names are matched case-insensitively).
    None when absent."""
    if extractor.body_json_pointer is not None:
        return response.scalars.get(extractor.body_json_pointer)
    assert extractor.header is not None  # the Extractor model guarantees exactly one source
    return response.headers.get(extractor.header.lower())
