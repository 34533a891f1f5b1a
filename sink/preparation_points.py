"""The names of the crash points of freeze, seal and admission (``sink.preparation.failpoints``).

They live outside the ``sink.preparation`` package so that ``sink.runtime.failpoints``, which every
delivery process imports to refuse an unknown armed name, can list them without importing the
package: its ``__init__`` loads freeze, sealing, admission, the planner and the compiler, which a
``resume`` never runs (start-up cost).
"""

from __future__ import annotations

FAILPOINTS = (
    "freeze.source_read",
    "freeze.rows_durable",
    "freeze.parent_durable",
    "seal.first_child_sealed",
    "seal.all_sealed",
    "admit.root_published",
    "admit.committed",
)

__all__ = ["FAILPOINTS"]
