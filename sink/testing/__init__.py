"""Test doubles shipped beside the real adapters, as httpx ships ``MockTransport`` beside its
transports: unit-test a profile, a request builder or a sink policy without sockets or a disk.

- :class:`ScriptedTransport` satisfies ``RestTransportPort``: it answers each mutation with the
  next scripted ``TransportOutcome`` and records what was sent; :func:`responded`,
  :func:`reached_peer` and :func:`not_started` build the outcomes of each certainty.
- :class:`InMemoryArtifactStore` satisfies ``ImmutableArtifactPort``: content-addressed,
  create-if-absent, digest verified on every read, held in a dict.

The transport contract types a script needs are re-exported here. Nothing imports pytest; a
script that runs out raises :class:`ScriptExhausted`, an ``AssertionError``, so a test runner
reports it as the test's failure. See docs/api.md.
"""

from sink.contracts.profile_policy import TimeoutVector
from sink.contracts.transport import (
    FailureKind,
    PreparedRequest,
    RestTransportPort,
    SendCertainty,
    TransportOutcome,
    TransportPhase,
)
from sink.testing.artifacts import InMemoryArtifactStore, MemoryArtifact
from sink.testing.outcomes import TEST_TIMEOUTS, not_started, reached_peer, responded
from sink.testing.transport import Answer, ScriptedTransport, ScriptExhausted, Sent

__all__ = [
    "TEST_TIMEOUTS", "Answer", "FailureKind", "InMemoryArtifactStore", "MemoryArtifact", "PreparedRequest",
    "RestTransportPort", "ScriptExhausted", "ScriptedTransport", "SendCertainty", "Sent", "TimeoutVector",
    "TransportOutcome", "TransportPhase", "not_started", "reached_peer", "responded",
]
