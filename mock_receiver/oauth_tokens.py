"""Issued OAuth access tokens, in this process's memory only.

A restart forgets them (as a vendor's token service outage would). They are stored under their SHA-256
digest, so the token text itself is kept nowhere. Expiry is on the monotonic clock, not the receiver
clock: ``/_admin/clock/advance`` moves ledger time, while ``POST /_admin/auth/expire-tokens`` is the way
to force a refresh.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_LIVE_TOKENS = 100_000


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


@dataclass(frozen=True)
class IssuedToken:
    expires_at: float
    scopes: frozenset[str]


class TokenStore:
    """Access tokens by digest, each accepted until its own expiry."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._tokens: dict[bytes, IssuedToken] = {}
        self.issued = 0

    def issue(self, ttl_seconds: int, scopes: frozenset[str]) -> str:
        now = self._clock()
        if len(self._tokens) >= MAX_LIVE_TOKENS:
            self._tokens = {key: value for key, value in self._tokens.items() if value.expires_at > now}
            if len(self._tokens) >= MAX_LIVE_TOKENS:
                # Bounded memory: the oldest live token goes first (dicts keep insertion order).
                del self._tokens[next(iter(self._tokens))]
        token = secrets.token_urlsafe(32)
        self._tokens[_digest(token)] = IssuedToken(expires_at=now + ttl_seconds, scopes=scopes)
        self.issued += 1
        return token

    def lookup(self, token: str) -> tuple[IssuedToken | None, bool]:
        """(the token, whether it is still valid); (None, False) for a token never issued here."""
        issued = self._tokens.get(_digest(token))
        if issued is None:
            return None, False
        return issued, issued.expires_at > self._clock()

    def active(self) -> int:
        now = self._clock()
        return sum(1 for value in self._tokens.values() if value.expires_at > now)

    def expire_all(self) -> int:
        """Make every current token expired now (they stay known, so a client sees token_expired)."""
        now = self._clock()
        expired = 0
        for key, value in self._tokens.items():
            if value.expires_at > now:
                self._tokens[key] = IssuedToken(expires_at=now, scopes=value.scopes)
                expired += 1
        return expired
