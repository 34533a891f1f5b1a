"""``--log-level trace`` prints each request's ASGI scope (uvicorn's message logger): its headers and
bodies are already placeholders, but the query string is printed verbatim, and a key sent as
``?api_key=...`` would land in the log. This filter, on the ``uvicorn.asgi`` logger, replaces every
query value with ``<redacted>`` before the record is formatted (parameter names stay, so the log still
says which parameters came)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

ASGI_LOGGER = "uvicorn.asgi"
_NAME = re.compile(rb"[A-Za-z0-9_.~-]{1,64}\Z")
REDACTED = b"<redacted>"


def redact_query(query: bytes) -> bytes:
    """``a=1&b=2`` -> ``a=<redacted>&b=<redacted>``; a part without ``=`` or whose name is not a plain
    short name is redacted whole (it could be the secret itself)."""
    parts = []
    for part in query.split(b"&"):
        name, equals, _ = part.partition(b"=")
        if not part:
            continue
        parts.append(name + b"=" + REDACTED if equals and _NAME.match(name) else REDACTED)
    return b"&".join(parts)


def _redacted(value: object) -> object:
    if isinstance(value, Mapping) and isinstance(value.get("query_string"), bytes | bytearray):
        return {**value, "query_string": redact_query(bytes(value["query_string"]))}
    return value


class RedactQueryValues(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted(arg) for arg in record.args)
        elif isinstance(record.args, Mapping):
            record.args = _redacted(record.args)  # type: ignore[assignment]
        return True


def install() -> None:
    """Idempotent: one filter on the ASGI message logger."""
    logger = logging.getLogger(ASGI_LOGGER)
    if not any(isinstance(item, RedactQueryValues) for item in logger.filters):
        logger.addFilter(RedactQueryValues())
