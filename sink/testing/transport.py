"""ScriptedTransport: a ``RestTransportPort`` whose answers a test writes down in advance."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sink.contracts.profile_policy import TimeoutVector
from sink.contracts.transport import PreparedRequest, ResponseBounds, TransportOutcome

Answer = TransportOutcome | Callable[[PreparedRequest], TransportOutcome]
"""A fixed outcome, or a function of the request that computes one (to answer with its body digest)."""

READ_ONLY_METHODS = frozenset({"GET"})


class ScriptExhausted(AssertionError):
    """The code under test sent a request the script has no answer for. An ``AssertionError`` so
    that a test runner reports it as the test's failure, not as an error of the double."""


@dataclass(frozen=True, slots=True)
class Sent:
    """One request as the code under test handed it over, with the limits it asked for."""

    request: PreparedRequest
    timeouts: TimeoutVector
    bounds: ResponseBounds | None
    observer: Callable[[str], None] | None


class ScriptedTransport:
    """Answers each mutation (POST, PUT, PATCH) with the next outcome of ``submits``, in
    order, and every read-only request with ``read``. Before answering it tells the observer each
    step of ``trace`` (httpcore's trace step names, e.g. ``"http11.send_request_body.complete"``),
    as the real transport does, so failpoints hung on request boundaries fire.

    Never performs I/O; ``sent`` records every request in order."""

    def __init__(self, submits: Sequence[Answer] = (), read: Answer | None = None,
                 trace: tuple[str, ...] = ()) -> None:
        self._submits = list(submits)
        self.read = read
        self._trace = trace
        self.sent: list[Sent] = []
        self.closed = False

    def send(self, request: PreparedRequest, *, timeouts: TimeoutVector, bounds: ResponseBounds | None = None,
             observer: Callable[[str], None] | None = None) -> TransportOutcome:
        self.sent.append(Sent(request, timeouts, bounds, observer))
        if observer is not None:
            for step in self._trace:
                observer(step)
        if request.method in READ_ONLY_METHODS:
            answer = self.read
            if answer is None:
                raise ScriptExhausted(f"no scripted answer for a read-only {request.method}")
        else:
            if not self._submits:
                raise ScriptExhausted(f"more mutations sent than scripted ({len(self.mutations())} sent)")
            answer = self._submits.pop(0)
        return answer(request) if callable(answer) else answer

    def close(self) -> None:
        self.closed = True

    @property
    def remaining(self) -> int:
        """Scripted mutation answers not used yet (a test can assert the script was used up)."""
        return len(self._submits)

    def mutations(self) -> list[Sent]:
        return [s for s in self.sent if s.request.method not in READ_ONLY_METHODS]

    def reads(self) -> list[Sent]:
        return [s for s in self.sent if s.request.method in READ_ONLY_METHODS]

    def posts(self) -> list[Sent]:
        return [s for s in self.sent if s.request.method == "POST"]

    def gets(self) -> list[Sent]:
        return [s for s in self.sent if s.request.method == "GET"]
