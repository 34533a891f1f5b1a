"""Does a certified read-only query prove that the delivery key's effect is absent, so that an
operator reconciliation may open a retry? (seed: "Safe retry and remote fencing": automatic retry
is permitted when "a read-only query proves exact absence for the delivery key under certified
consistency"; "Lease separation": "may submit again only after exact absence is proven or a
certified remote fence authorizes same-key replay").

Pure. Absence is proven only when all of these hold:

* the profile certifies a read-only summary of the child's scope and the receiver answered it;
* the sealed payload has rows and the receiver holds none in the scope: nothing of this delivery,
  not even part of it, is applied (a scope holding other rows proves nothing either way: an older
  generation, or a partial application of this one);
* nothing sent earlier can still be applied: either the profile's fence certifiably deduplicates a
  same-key request (a late original and the retry cannot both apply), or the last attempt is older
  than the profile's operation total bound (the certified longest an operation may run).

Otherwise the reconciliation records what the evidence supports and never opens a resend.
"""

from __future__ import annotations

from sink.contracts.profile import OperationProfile
from sink.runtime.retry_guard import fence_permits_replay
from sink.runtime.verification import ExpectedDelivery, ReceiverSummary


def proves_absence(summary: ReceiverSummary | None, expected: ExpectedDelivery, *, profile: OperationProfile,
                   last_attempt_age_ms: int | None) -> bool:
    if summary is None or expected.rows <= 0 or summary.row_count != 0:
        return False
    if fence_permits_replay(profile.mutation_fence):
        return True
    return last_attempt_age_ms is not None and last_attempt_age_ms > profile.timeouts.operation_total_ms
