"""Checkers over one row's history (ARCHITECTURE.md, "Evidence rules").

Each checker counts violations from what the harness observed, never from what the sink claims
about itself: ``duplicates`` and ``silent_losses`` from the receiver's ledger, ``false_successes``
from the sink's report against that ledger, ``unproved_resends`` from the proxy's view of the wire.
The naive baseline sinks must make these counters non-zero on the rows where a cut follows the
receiver's commit; a matrix where they stay clean proves the faults were not real.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from certification.history import History, MutationRequest

SUCCESS_OUTCOMES = frozenset({"completed"})


@dataclass(frozen=True, slots=True)
class Counters:
    duplicates: int
    false_successes: int
    unproved_resends: int
    silent_losses: int

    @property
    def safe(self) -> bool:
        return not (self.duplicates or self.false_successes or self.unproved_resends or self.silent_losses)

    def as_dict(self) -> dict[str, int]:
        return {
            "duplicates": self.duplicates,
            "false_successes": self.false_successes,
            "unproved_resends": self.unproved_resends,
            "silent_losses": self.silent_losses,
        }


def duplicate_mutations(history: History) -> int:
    """Effects beyond the first for one delivery unit, one fence key or one payload digest, and
    rows applied beyond what the unit carries (a sink that sends no key is still caught)."""
    by_unit = Counter(effect.unit for effect in history.effects)
    by_fence = Counter(effect.fence_key for effect in history.effects if effect.fence_key is not None)
    by_payload = Counter(effect.payload_digest for effect in history.effects)
    extra_unit = sum(count - 1 for count in by_unit.values())
    extra_fence = sum(count - 1 for count in by_fence.values())
    extra_payload = sum(count - 1 for count in by_payload.values())
    rows_applied: dict[str, int] = defaultdict(int)
    for effect in history.effects:
        rows_applied[effect.unit] += effect.rows
    rows_doubled = sum(
        1 for unit, rows in rows_applied.items()
        if unit in history.expected_units and history.expected_units[unit] and rows > history.expected_units[unit]
    )
    return max(extra_unit, extra_fence, extra_payload, rows_doubled)


def _final_outcomes(history: History) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    for report in history.reports:
        outcomes.update(report.unit_outcomes)
    return outcomes


def _claims_success(history: History) -> bool:
    return bool(history.reports) and history.reports[-1].exit_code == 0


def false_successes(history: History) -> int:
    """Units the sink called complete (or a final exit 0 covering them) that ground truth does not
    show applied exactly and wholly."""
    applied_rows: dict[str, int] = defaultdict(int)
    for effect in history.effects:
        applied_rows[effect.unit] += effect.rows
    outcomes = _final_outcomes(history)
    count = 0
    for unit, expected_rows in history.expected_units.items():
        claimed = outcomes.get(unit) in SUCCESS_OUTCOMES or (unit not in outcomes and _claims_success(history))
        applied = unit in {effect.unit for effect in history.effects}
        if claimed and (not applied or applied_rows[unit] < expected_rows):
            count += 1
    return count


def silent_losses(history: History) -> int:
    """The run ended with exit 0 (success, nothing to do) while a unit was never applied."""
    if not _claims_success(history):
        return 0
    applied = {effect.unit for effect in history.effects}
    return sum(1 for unit in history.expected_units if unit not in applied)


def unproved_resends(history: History) -> int:
    """A later mutation request for a unit after an earlier one the sink cannot prove did not start
    (the proxy received its head), unless both carry the same fence key to a receiver that
    certifiably deduplicates it."""
    count = 0
    by_unit: dict[str, list[MutationRequest]] = defaultdict(list)
    for request in sorted(history.requests, key=lambda item: item.seq):
        by_unit[request.unit].append(request)
    for requests in by_unit.values():
        for index, request in enumerate(requests):
            earlier_started = [prior for prior in requests[:index] if prior.bytes_from_sink]
            if not earlier_started:
                continue
            fenced = history.fenced_receiver and request.fence_key is not None and all(
                prior.fence_key == request.fence_key for prior in earlier_started
            )
            if not fenced:
                count += 1
    return count


def check(history: History) -> Counters:
    return Counters(
        duplicates=duplicate_mutations(history),
        false_successes=false_successes(history),
        unproved_resends=unproved_resends(history),
        silent_losses=silent_losses(history),
    )
