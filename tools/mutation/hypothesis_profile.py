"""pytest plugin the mutation runner loads (-p hypothesis_profile): Hypothesis without deadlines
and with derandomized examples, so a mutant's verdict depends on the mutant only — not on the
machine's load (a deadline miss would count as a false kill) nor on a lucky draw."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("mutation", deadline=None, derandomize=True, database=None)
settings.load_profile("mutation")
