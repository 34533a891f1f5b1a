"""``path_regex`` matching with RE2, a linear-time engine.

Python's ``re`` backtracks: ``/(a+)+b`` against ``/aaaa...`` doubles its work per character, and
since every rule is matched on the proxy's single event loop, one such rule stalls all traffic and
the control API with it. RE2 (``google-re2``, Google's own bindings) runs in time linear in the
path length for every pattern it accepts; what it cannot do in linear time (backreferences,
lookaround) it refuses at compile time, so the control API answers 422 when the rule is added.

``max_mem`` bounds the compiled program and its DFA cache; an expression needing more is refused,
and a DFA that outgrows the cache at match time falls back to RE2's NFA, still linear.
"""

from __future__ import annotations

from typing import Any

import re2  # type: ignore[import-untyped]

MAX_PROGRAM_BYTES = 1 << 20


class PathRegexError(ValueError):
    """The expression is not valid RE2 syntax, or needs more memory than allowed."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print each refused pattern to stderr
    options.max_mem = MAX_PROGRAM_BYTES
    return options


class PathRegex:
    def __init__(self, pattern: str) -> None:
        try:
            self._compiled: Any = re2.compile(pattern, options=_options())
        except UnicodeError:
            raise PathRegexError("not valid Unicode text") from None
        except re2.error as exc:
            reason = exc.args[0] if exc.args else "invalid expression"
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", "replace")
            # RE2 quotes the pattern after the reason ("missing ): (a"): keep the reason only.
            raise PathRegexError(str(reason).split(":", 1)[0]) from None
        self.pattern = pattern

    def fullmatch(self, path: str) -> bool:
        try:
            return self._compiled.fullmatch(path) is not None
        except UnicodeError:
            # mitmproxy keeps non-UTF-8 path bytes as lone surrogates; match their replacement.
            readable = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            return self._compiled.fullmatch(readable) is not None
