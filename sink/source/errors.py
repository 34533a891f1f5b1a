"""Stable source and preparation errors, with field evidence and never a value.

The catalogue and the exception live in ``sink.contracts.source`` (the sealer raises them too and
must not import the source adapters); this module is the adapters' name for them.
"""

from __future__ import annotations

from sink.contracts.source import MAX_EVIDENCE_CHARS, SOURCE_ERROR_CODES, SourceError

__all__ = ["MAX_EVIDENCE_CHARS", "SOURCE_ERROR_CODES", "SourceError"]
