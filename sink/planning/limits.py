"""PlanningLimits from a compiled plan: the profile's limits and the workload's effective window.

``max_window_days`` is the profile's ``preferred_window_days.max`` (the widest window the receiver
accepts in one request); ``preferred_window_days`` is the plan's effective preference (workload
override, else the profile default). A profile without a window limit lets a window span up to
``UNBOUNDED_WINDOW_DAYS``, the bound the profile schema puts on any window.
"""

from __future__ import annotations

from sink.contracts.plan import CompiledPlan
from sink.contracts.planning import PlanningLimits
from sink.contracts.profile import Limits

UNBOUNDED_WINDOW_DAYS = 366


def planning_limits(limits: Limits, preferred_window_days: int | None, fixed_overhead_bytes: int = 0) -> PlanningLimits:
    window = limits.preferred_window_days
    max_window = UNBOUNDED_WINDOW_DAYS if window is None else window.max
    if preferred_window_days is None:
        preferred_window_days = max_window if window is None else window.default
    return PlanningLimits(
        max_rows=limits.max_rows,
        max_decoded_bytes=limits.max_decoded_bytes,
        planning_decoded_bytes=limits.planning_decoded_bytes,
        max_wire_bytes=limits.max_wire_bytes,
        planning_wire_bytes=limits.planning_wire_bytes,
        preferred_window_days=preferred_window_days,
        max_window_days=max_window,
        fixed_overhead_bytes=fixed_overhead_bytes,
    )


def planning_limits_from_plan(plan: CompiledPlan, fixed_overhead_bytes: int = 0) -> PlanningLimits:
    """The limits every child of ``plan`` must meet; ``fixed_overhead_bytes`` comes from the codec."""
    return planning_limits(plan.operation.limits, plan.workload.preferred_window_days, fixed_overhead_bytes)
