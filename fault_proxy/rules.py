"""Fault rules: what to match, when to fire, and which phase of the exchange to cut.

A rule is validated with pydantic (closed models, ``extra="forbid"``) so the control API can
answer bad input with a stable 4xx problem document instead of failing later inside a hook.
Every string and list is bounded, and so is the number of rules: each request is matched against
all of them on the proxy's single event loop.
"""

from __future__ import annotations

import fnmatch
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, Strict, model_validator

from fault_proxy.path_regex import PathRegex, PathRegexError

MAX_RULES = 1000
MAX_PATTERN_CHARS = 1024
MAX_NAMES = 32
MAX_NAME_CHARS = 128
MAX_HEADER_VALUE_CHARS = 4096
_HeaderName = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
# Numbers are strict: "5" and true are not numbers (pydantic's lax mode would read them as 5 and 1).
# A strict float still takes a JSON integer (5 is 5.0).
_Int = Annotated[int, Strict()]
_Float = Annotated[float, Strict()]
# The proxy frames a synthetic answer itself; a header that reframes it would make the client read
# a different message than the one sent (a status fault is not a framing fault).
_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding"})
BODYLESS_STATUSES = frozenset({204, 304})  # RFC 9110 15.3.5, 15.4.5: these answers never carry content

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_RULE_ID = r"^[A-Za-z0-9_.-]{1,64}$"

Phase = Literal["connect", "request_headers", "request", "forwarded", "response"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Match(_Closed):
    """Which requests a rule applies to. Every given criterion must hold (logical AND)."""

    method: str | None = Field(default=None, max_length=32, description="HTTP method, case-insensitive")
    path: str | None = Field(
        default=None, max_length=MAX_PATTERN_CHARS, description="glob on the path without query (fnmatch)"
    )
    path_regex: str | None = Field(
        default=None, max_length=MAX_PATTERN_CHARS, description="RE2 regular expression, must match the whole path"
    )
    headers_present: tuple[_HeaderName, ...] = Field(
        default=(), max_length=MAX_NAMES, description="header names that must be present"
    )
    headers_absent: tuple[_HeaderName, ...] = Field(
        default=(), max_length=MAX_NAMES, description="header names that must be absent"
    )
    _compiled: PathRegex | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self) -> Match:
        if self.path is not None and self.path_regex is not None:
            raise ValueError("give either path (glob) or path_regex, not both")
        if self.method is not None and not _TOKEN.match(self.method):
            raise ValueError("method must be an HTTP token")
        for name in (*self.headers_present, *self.headers_absent):
            if not _TOKEN.match(name):
                raise ValueError(f"header name {name!r} is not an HTTP token")
        if self.path_regex is not None:
            try:
                compiled = PathRegex(self.path_regex)
            except PathRegexError as exc:
                raise ValueError(f"path_regex is not a valid RE2 expression: {exc}") from None
            self._compiled = compiled
        return self

    def _regex(self) -> PathRegex:
        if self._compiled is None:  # e.g. a copy made without running the validator
            assert self.path_regex is not None
            self._compiled = PathRegex(self.path_regex)
        return self._compiled

    @property
    def is_empty(self) -> bool:
        return (
            self.method is None
            and self.path is None
            and self.path_regex is None
            and not self.headers_present
            and not self.headers_absent
        )

    def matches(self, method: str, path: str, header_names: frozenset[str]) -> bool:
        if self.method is not None and method.upper() != self.method.upper():
            return False
        if self.path is not None and not fnmatch.fnmatchcase(path, self.path):
            return False
        if self.path_regex is not None and not self._regex().fullmatch(path):
            return False
        if any(name.lower() not in header_names for name in self.headers_present):
            return False
        return not any(name.lower() in header_names for name in self.headers_absent)


class CloseFault(_Closed):
    """Close the client connection at a phase; nothing more is read, forwarded or answered."""

    action: Literal["close"]
    phase: Literal["connect", "request_headers", "request", "response"]


class TruncateFault(_Closed):
    """Deliver the response head and the first ``body_bytes`` body bytes, then close."""

    action: Literal["truncate"]
    phase: Literal["response"] = "response"
    body_bytes: _Int = Field(ge=0, le=1 << 30)


class DelayFault(_Closed):
    """Sleep before forwarding (phase request) or before answering the client (phase response)."""

    action: Literal["delay"]
    phase: Literal["request", "response"]
    seconds: _Float = Field(gt=0, le=600)


class StatusFault(_Closed):
    """Answer with a synthetic status without contacting the receiver."""

    action: Literal["status"]
    phase: Literal["request"] = "request"
    status: _Int = Field(ge=200, le=599)
    headers: dict[_HeaderName, Annotated[str, Field(max_length=MAX_HEADER_VALUE_CHARS)]] = Field(
        default_factory=dict, max_length=MAX_NAMES
    )
    body: str | None = Field(default=None, max_length=65536, description="default: a problem+json document")

    @model_validator(mode="after")
    def _check_headers(self) -> StatusFault:
        for name, value in self.headers.items():
            if not _TOKEN.match(name):
                raise ValueError(f"header name {name!r} is not an HTTP token")
            if any(ch in value for ch in "\r\n\x00"):
                raise ValueError(f"header {name!r} value contains CR, LF or NUL")
            if name.lower() in _FRAMING_HEADERS:
                raise ValueError(f"header {name!r} is set by the proxy from the body it sends")
        if self.status in BODYLESS_STATUSES and self.body:
            # Refused rather than dropped: the rule asks for something HTTP cannot send, and a
            # body after a 204/304 head would be read by the client as the start of the next answer.
            raise ValueError(f"a {self.status} answer has no body; leave body out (none is sent)")
        return self


class HoldFault(_Closed):
    """Park the request until the control API releases or cuts it (or the timeout applies ``on_timeout``)."""

    action: Literal["hold"]
    phase: Literal["request", "response"]
    timeout_seconds: _Float = Field(default=60.0, gt=0, le=3600)
    on_timeout: Literal["release", "cut"] = "cut"


class KillFault(_Closed):
    """SIGKILL a process (e.g. the sink worker that sent the request) when the request reaches a phase.

    The phase fixes what the receiver sees: ``request_headers`` and ``request`` close the client
    connection afterwards (never forwarded); ``forwarded`` acts once the complete request has been
    handed to the upstream connection; ``response`` acts after the receiver answered and drops the answer.
    """

    action: Literal["kill"]
    phase: Literal["request_headers", "request", "forwarded", "response"]
    pid: _Int = Field(ge=2, le=4_194_304)


Fault = Annotated[
    CloseFault | TruncateFault | DelayFault | StatusFault | HoldFault | KillFault,
    Field(discriminator="action"),
]


class RuleSpec(_Closed):
    """A rule as submitted to the control API."""

    id: str | None = Field(default=None, pattern=_RULE_ID)
    match: Match = Field(default_factory=Match)
    nth: _Int | None = Field(default=None, ge=1, description="eligible from the nth matching request on")
    fire: Literal["once", "always", "probability"] = "always"
    probability: _Float | None = Field(default=None, ge=0.0, le=1.0)
    fault: Fault

    @model_validator(mode="after")
    def _check(self) -> RuleSpec:
        if (self.fire == "probability") != (self.probability is not None):
            raise ValueError("probability is required with fire='probability' and only then")
        if self.fault.phase == "connect" and not self.match.is_empty:
            raise ValueError("a connect-phase rule cannot match request fields: no request byte is read yet")
        return self


@dataclass
class Rule:
    """A live rule: the validated spec plus its counters and its own seeded random stream."""

    id: str
    spec: RuleSpec
    rng: random.Random
    matched: int = 0
    fired: int = 0
    armed: bool = True

    def to_json(self) -> dict[str, object]:
        body = self.spec.model_dump(mode="json")
        body["id"] = self.id
        body["matched"] = self.matched
        body["fired"] = self.fired
        body["armed"] = self.armed
        return body


@dataclass(frozen=True)
class Firing:
    rule_id: str
    fault: CloseFault | TruncateFault | DelayFault | StatusFault | HoldFault | KillFault


class DuplicateRuleError(ValueError):
    pass


class RuleLimitError(ValueError):
    pass


@dataclass
class RuleBook:
    """Ordered rules. Decisions are reproducible: each rule draws from ``Random(f"{seed}/{rule_id}")``.

    The same seed, rule ids and sequence of matching requests give the same decisions, whatever
    other rules or unrelated traffic do.
    """

    seed: int
    rules: list[Rule] = field(default_factory=list)
    _next_id: int = 1

    def add(self, spec: RuleSpec) -> Rule:
        if len(self.rules) >= MAX_RULES:
            raise RuleLimitError(f"at most {MAX_RULES} rules; delete some first")
        rule_id = spec.id
        if rule_id is None:
            while self.get(f"r{self._next_id}") is not None:
                self._next_id += 1
            rule_id = f"r{self._next_id}"
            self._next_id += 1
        elif self.get(rule_id) is not None:
            raise DuplicateRuleError(f"rule {rule_id!r} already exists")
        rule = Rule(id=rule_id, spec=spec, rng=random.Random(f"{self.seed}/{rule_id}"))
        self.rules.append(rule)
        return rule

    def get(self, rule_id: str) -> Rule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    def delete(self, rule_id: str) -> bool:
        rule = self.get(rule_id)
        if rule is None:
            return False
        self.rules.remove(rule)
        return True

    def clear(self, seed: int | None = None) -> None:
        self.rules.clear()
        self._next_id = 1
        if seed is not None:
            self.seed = seed

    def decide_connection(self) -> list[Firing]:
        """Decisions for a new client connection (only connect-phase rules count connections)."""
        return self._decide(lambda rule: rule.spec.fault.phase == "connect")

    def decide_request(self, method: str, path: str, header_names: frozenset[str]) -> list[Firing]:
        """Decisions for one request, taken once when its headers are read."""
        return self._decide(
            lambda rule: rule.spec.fault.phase != "connect"
            and rule.spec.match.matches(method, path, header_names)
        )

    def _decide(self, applies: Callable[[Rule], bool]) -> list[Firing]:
        firings: list[Firing] = []
        for rule in self.rules:
            if not applies(rule):
                continue
            rule.matched += 1
            if not rule.armed or (rule.spec.nth is not None and rule.matched < rule.spec.nth):
                continue
            if rule.spec.fire == "probability":
                assert rule.spec.probability is not None
                if rule.rng.random() >= rule.spec.probability:
                    continue
            elif rule.spec.fire == "once":
                rule.armed = False
            rule.fired += 1
            firings.append(Firing(rule.id, rule.spec.fault))
        return firings
