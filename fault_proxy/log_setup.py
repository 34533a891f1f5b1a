"""``--log-level`` for both servers: where their logs go, and what never reaches them.

uvicorn (the control APIs) and mitmproxy (the proxied port) log what a client sent: uvicorn at
``trace`` prints each request's ASGI scope, query string included; mitmproxy at ``info`` and below
prints a refused request head as a byte literal, header values included. A query value or a header
value may be a credential (``?api_key=``, ``Authorization``), and nothing a client sends may land in
a log verbatim. Every record passes ``RedactingFilter`` on its way to stderr:

- a byte literal (``b'...'`` / ``b"..."``, how both libraries print raw wire bytes) is replaced by
  ``<redacted bytes>``;
- in text, the value of every query parameter (``?name=value`` / ``&name=value``) is replaced by
  ``<redacted>``; the name stays, it says what was sent without saying the secret.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from uvicorn.logging import TRACE_LOG_LEVEL

REDACTED = "<redacted>"
REDACTED_BYTES = "<redacted bytes>"

_BYTES_LITERAL = re.compile(r"""b'(?:[^'\\]|\\.)*'|b"(?:[^"\\]|\\.)*\"""")
_QUERY_VALUE = re.compile(r"""([?&;][^=&;?#\s'"]{0,256}=)[^&;#\s'"]*""")


def redact(text: str) -> str:
    """``text`` without byte literals and without query values."""
    text = _BYTES_LITERAL.sub(REDACTED_BYTES, text)
    return _QUERY_VALUE.sub(lambda found: found.group(1) + REDACTED, text)


class RedactingFilter(logging.Filter):
    """Formats the record's message and traceback once, redacted, so no handler sees the originals."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a record whose arguments do not fit its format
            message = str(record.msg)
        record.msg, record.args = redact(message), None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


def numeric_level(name: str) -> int:
    return TRACE_LOG_LEVEL if name == "trace" else int(getattr(logging, name.upper()))


def log_config(level: str) -> dict[str, Any]:
    """``logging.config.dictConfig`` settings (passed to uvicorn as ``log_config``): one stderr
    handler behind the redacting filter for uvicorn's, mitmproxy's and the project's loggers."""
    numeric = numeric_level(level)
    logger = {"handlers": ["stderr"], "level": numeric, "propagate": False}
    # mitmproxy's own messages start at info: its warnings and errors repeat what the proxy already
    # reports in its own words (a startup error line, the request log's ``error``).
    mitmproxy = {**logger, "level": numeric if numeric <= logging.INFO else logging.CRITICAL + 1}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"redact": {"()": RedactingFilter}},
        "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr",
                                "formatter": "plain", "filters": ["redact"]}},
        "loggers": {**{name: dict(logger) for name in ("uvicorn", "uvicorn.error", "uvicorn.access",
                                                        "uvicorn.asgi", "fault_proxy")},
                    "mitmproxy": mitmproxy},
    }
