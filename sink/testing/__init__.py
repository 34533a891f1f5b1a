"""Test doubles shipped beside the real adapters, as httpx ships ``MockTransport`` beside its
transports: unit-test a profile, a request builder or a sink policy without sockets or a disk.

- :class:`ScriptedTransport` satisfies ``sink.contracts.transport.RestTransportPort``: it answers
  each mutation with the next scripted ``TransportOutcome`` and records what was sent.
- :class:`InMemoryArtifactStore` satisfies ``sink.artifacts.port.ImmutableArtifactPort``:
  content-addressed, create-if-absent, digest verified on every read, held in a dict.

Neither imports pytest; a script that runs out raises :class:`ScriptExhausted`, an
``AssertionError``, so a test runner reports it as the test's failure. See docs/api.md.
"""

from sink.testing.artifacts import InMemoryArtifactStore, MemoryArtifact
from sink.testing.transport import Answer, ScriptedTransport, ScriptExhausted, Sent

__all__ = ["Answer", "InMemoryArtifactStore", "MemoryArtifact", "ScriptExhausted", "ScriptedTransport", "Sent"]
