"""Named crash points of the delivery runtime (issue 9, "Failpoints").

Every point where a worker crash changes what recovery must prove is named here, once:

* before and after every journal (or marker-store) write the supervisor makes:
  ``journal.<write>.before`` / ``journal.<write>.after``;
* around every request boundary of a mutation, a receipt poll and a read-only summary query:
  ``http.<kind>.<boundary>``, boundaries in wire order (before send, after the request headers
  were sent, after the body was sent, after the response headers, after the response body,
  before the result is recorded).

``ALL_FAILPOINTS`` is the one list the certification harness enumerates. A process arms points
with ``RESTPROOF_FAILPOINT=name[,name...]``; :meth:`Failpoints.from_environ` refuses unknown names
at startup (:class:`FailpointConfigError`, exit class 2 for the CLI). When an armed point is hit
the process writes one line to stderr (unbuffered) and SIGKILLs itself: no handler, no flush, no
cleanup runs, exactly like a machine losing power. Unarmed, ``hit`` is one falsy-set test.

``RESTPROOF_FAILPOINT_ACTION=stop`` makes an armed point SIGSTOP the process instead of killing
it: the worker freezes exactly there, and whoever launched it acts on the world (the certification
harness kills the journal server) before it sends SIGCONT; the worker then goes on as if nothing
happened, and meets the changed world at its next step. ``kill`` is the default. Either way a point
acts the first time it is reached in a process only.
"""

from __future__ import annotations

import functools
import os
import re
import signal
from collections.abc import Callable, Iterable, Mapping

# Not sink.preparation.failpoints: importing it would load the whole preparation package (start-up cost).
from sink.preparation_points import FAILPOINTS as PREPARATION_POINTS

ENV_VAR = "RESTPROOF_FAILPOINT"
ACTION_ENV_VAR = "RESTPROOF_FAILPOINT_ACTION"
__all__ = [
    "ACTIONS", "ACTION_ENV_VAR", "ALL_FAILPOINTS", "DISARMED", "ENV_VAR", "JOURNAL_WRITES", "PREPARATION_POINTS",
    "REQUEST_BOUNDARIES", "REQUEST_KINDS", "FailpointConfigError", "Failpoints", "journal_point", "parse_action",
    "parse_failpoints", "request_point",
]

JOURNAL_WRITES: tuple[str, ...] = (
    "record_sealed",
    "acquire_lease",
    "publish_marker",
    "reserve_submitting",
    "record_submit_result",
    "record_continuation",
    "record_observation",
    "record_poll_result",
    "record_verification",
    "promote_frontier",
    "release_lease",
)
"""The supervisor's durable writes, in the order one child meets them. The admission of a parent
is not among them: preparation names its crash points (``admit.root_published`` before the
journal write, ``admit.committed`` after it), and a name no code reaches would only arm nothing
(so a retry abandoned by the budget, which no longer happens automatically, has none)."""

REQUEST_KINDS: tuple[str, ...] = ("submit", "poll", "summary")
REQUEST_BOUNDARIES: tuple[str, ...] = (
    "before_send",
    "after_headers_sent",
    "after_body_sent",
    "after_response_headers",
    "after_response_body",
    "before_record_result",
)


def journal_point(write: str, when: str) -> str:
    """``journal.<write>.<before|after>``; refuses a write or moment that is not listed."""
    if write not in JOURNAL_WRITES or when not in ("before", "after"):
        raise ValueError(f"no journal failpoint for {write!r} {when!r}")
    return f"journal.{write}.{when}"


def request_point(kind: str, boundary: str) -> str:
    """``http.<kind>.<boundary>``; refuses a kind or boundary that is not listed."""
    if kind not in REQUEST_KINDS or boundary not in REQUEST_BOUNDARIES:
        raise ValueError(f"no request failpoint for {kind!r} {boundary!r}")
    return f"http.{kind}.{boundary}"


ALL_FAILPOINTS: tuple[str, ...] = (
    # Freeze, seal and admission (sink.preparation): named there, armed by the same variable here.
    *PREPARATION_POINTS,
    *(journal_point(write, when) for write in JOURNAL_WRITES for when in ("before", "after")),
    *(request_point(kind, boundary) for kind in REQUEST_KINDS for boundary in REQUEST_BOUNDARIES),
)
_KNOWN = frozenset(ALL_FAILPOINTS)
_NAME_LIKE = re.compile(r"[A-Za-z0-9_.-]{1,80}")


class FailpointConfigError(ValueError):
    """``RESTPROOF_FAILPOINT`` names something that is not a failpoint."""


def _printable(name: str) -> str:
    # Echo only what looks like a failpoint name: anything else pasted into the variable (a
    # token, a path) stays out of the error message.
    return name if _NAME_LIKE.fullmatch(name) else "(not a failpoint-like name)"


def parse_failpoints(value: str | None) -> frozenset[str]:
    """The armed set of a ``name[,name...]`` value; empty or unset arms nothing. Surrounding
    whitespace is ignored; an empty item or an unknown name is refused, naming what was wrong."""
    if value is None or not value.strip():
        return frozenset()
    names = [item.strip() for item in value.split(",")]
    if "" in names:
        raise FailpointConfigError(f"{ENV_VAR} has an empty item; give name[,name...]")
    unknown = sorted(set(names) - _KNOWN)
    if unknown:
        shown = ", ".join(_printable(name) for name in unknown[:5])
        raise FailpointConfigError(
            f"{ENV_VAR} names {len(unknown)} unknown failpoint(s): {shown}; "
            f"the {len(ALL_FAILPOINTS)} known ones are listed in sink.runtime.failpoints.ALL_FAILPOINTS"
        )
    return frozenset(names)


def _signal_self(signum: signal.Signals, name: str) -> None:
    # os.write: unbuffered, so the line is out before the signal. SIGKILL: nothing else runs after
    # it. SIGSTOP: frozen until SIGCONT; nothing of the process runs meanwhile (no heartbeat, no timer).
    os.write(2, f"restproof failpoint {name}: {signum.name}\n".encode())
    os.kill(os.getpid(), signum)


_sigkill_self = functools.partial(_signal_self, signal.SIGKILL)
_SIGNALS = {"kill": signal.SIGKILL, "stop": signal.SIGSTOP}
ACTIONS = tuple(_SIGNALS)


def parse_action(value: str | None) -> Callable[[str], None]:
    """What an armed point does: ``kill`` (unset or empty: the default) or ``stop``."""
    chosen = (value or "").strip() or "kill"
    if chosen not in _SIGNALS:
        raise FailpointConfigError(f"{ACTION_ENV_VAR} must be one of {', '.join(ACTIONS)}")
    return _sigkill_self if chosen == "kill" else functools.partial(_signal_self, _SIGNALS[chosen])


class Failpoints:
    """The armed failpoints of one process. Injected into the supervisor and transport."""

    __slots__ = ("_armed", "_kill")

    def __init__(self, armed: Iterable[str] = (), *, kill: Callable[[str], None] = _sigkill_self) -> None:
        names = frozenset(armed)
        unknown = names - _KNOWN
        if unknown:
            raise FailpointConfigError(f"unknown failpoint(s): {', '.join(_printable(n) for n in sorted(unknown)[:5])}")
        self._armed = names
        self._kill = kill

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Failpoints:
        """Arm what ``RESTPROOF_FAILPOINT`` names, acting as ``RESTPROOF_FAILPOINT_ACTION`` says (call
        once at startup with ``os.environ``)."""
        return cls(parse_failpoints(environ.get(ENV_VAR)), kill=parse_action(environ.get(ACTION_ENV_VAR)))

    @property
    def armed(self) -> frozenset[str]:
        return self._armed

    def hit(self, name: str) -> None:
        """Die (or freeze) here if ``name`` is armed, the first time only. Unarmed: one test of an
        empty set, nothing else."""
        if self._armed and name in self._armed:
            # Once per process: a frozen worker is woken once by whoever acted on the world, and a
            # step met twice in one run (an async run releases its mutation and its observation
            # lease) would otherwise freeze it again with nobody left to wake it.
            self._armed = self._armed - {name}
            self._kill(name)
        elif self._armed and name not in _KNOWN:
            # Only checked while armed (a certification run): a misspelt point must not go quiet.
            raise ValueError(f"hit() of an unlisted failpoint {_printable(name)}")


DISARMED = Failpoints()
