"""How long a live worker waits between two receipt polls (seed: "Timeouts are a vector": poll
interval and poll retry are their own bounds; "Read-only receipt polling has a separate retry
budget").

Pure: the profile and the poll count in, a delay in milliseconds out.

* after an answer (the job is accepted or running): ``timeouts.poll_interval_ms``;
* after a transient error (no answer, 401/403/408/429/5xx): ``timeouts.poll_retry_ms``;
* a profile that sets neither grows the wait from ``poll_budget.initial_delay_ms``, doubling per
  poll made, up to ``poll_budget.max_delay_ms``.

The first poll after the job was accepted is due one interval after acceptance.
"""

from __future__ import annotations

from sink.contracts.profile import OperationProfile

_MAX_EXPONENT = 62


def _grown(profile: OperationProfile, polls_made: int) -> int:
    budget = profile.poll_budget
    if budget is None:  # pragma: no cover - an async profile always has a poll budget (compiler check)
        raise ValueError("the profile has no poll budget")
    return min(budget.max_delay_ms, budget.initial_delay_ms << min(max(polls_made, 0), _MAX_EXPONENT))


def next_poll_delay_ms(profile: OperationProfile, *, answered: bool, polls_made: int) -> int:
    """The wait before the next poll; ``answered``: the last poll got an answer (not an error)."""
    fixed = profile.timeouts.poll_interval_ms if answered else profile.timeouts.poll_retry_ms
    return fixed if fixed is not None else _grown(profile, polls_made)


def first_poll_delay_ms(profile: OperationProfile) -> int:
    """The wait between the acceptance of the job and its first poll."""
    return next_poll_delay_ms(profile, answered=True, polls_made=0)
