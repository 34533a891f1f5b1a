"""pytest plugin the mutation runner loads (-p hypothesis_profile): Hypothesis without deadlines
and with derandomized examples, so a mutant's verdict depends on the mutant only — not on the
machine's load (a deadline miss would count as a false kill) nor on a lucky draw. No shrinking:
a mutant's verdict needs one failing example, not the smallest one, and shrinking it cost seconds
per killed mutant (interval_map's property test)."""

from __future__ import annotations

from hypothesis import Phase, settings

settings.register_profile("mutation", deadline=None, derandomize=True, database=None,
                          phases=(Phase.explicit, Phase.reuse, Phase.generate))
settings.load_profile("mutation")
