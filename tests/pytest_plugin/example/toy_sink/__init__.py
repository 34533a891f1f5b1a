"""A toy sink, written the way a sink developer writes one in their own repository: it imports
nothing of restproof. It delivers batches to a REST receiver and, done right, never sends a batch
again under a new identity: every retry of a batch carries the batch's own Idempotency-Key, so the
receiver can tell a resend from a new request.

``blind=True`` is the classic bug, kept here so its tests can show restproof catching it: retry on
any error with no key at all, as a retried orchestrator task does.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

ATTEMPTS = 6
RETRYABLE = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Batch:
    method: str
    path: str
    """Path and query, e.g. ``/mock/v1/resources/measurements/batches?range_start=...``."""
    content_type: str
    body: bytes
    key: str
    """The batch's own idempotency key: the same on every attempt, in every process."""
    scope_from: str
    scope_to: str


def _send(base_url: str, batch: Batch, key: str | None) -> tuple[int, dict | None, str | None]:
    headers = {"Content-Type": batch.content_type}
    if key is not None:
        headers["Idempotency-Key"] = key
    request = urllib.request.Request(base_url.rstrip("/") + batch.path, data=batch.body, method=batch.method,
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw, status, retry_after = response.read(), response.status, response.headers.get("Retry-After")
    except urllib.error.HTTPError as error:
        raw, status, retry_after = error.read(), error.code, error.headers.get("Retry-After")
    try:
        document = json.loads(raw) if raw else None
    except ValueError:
        document = None
    return status, document if isinstance(document, dict) else None, retry_after


def deliver_batch(base_url: str, batch: Batch, *, blind: bool = False) -> str:
    """``completed``, ``partial`` (the receiver rejected some rows), ``failed`` or ``unknown``."""
    for attempt in range(ATTEMPTS):
        try:
            status, document, retry_after = _send(base_url, batch, None if blind else batch.key)
        except (OSError, http.client.HTTPException):
            time.sleep(0.2 * (attempt + 1))  # the bytes may have reached the receiver: same key again
            continue
        if 200 <= status < 300:
            return "partial" if document and document.get("rejected_rows") else "completed"
        if status == 409 and document and document.get("receipt_id") and not blind:
            return "completed"  # the receiver answers a repeat of our key with the first request's receipt
        if status in RETRYABLE or blind:
            time.sleep(float(retry_after) if retry_after and retry_after.isdigit() else 0.2 * (attempt + 1))
            continue
        return "failed"
    return "failed" if blind else "unknown"


def deliver(base_url: str, batches: list[Batch], *, blind: bool = False) -> list[dict[str, str]]:
    return [{"scope_from": batch.scope_from, "scope_to": batch.scope_to,
             "status": deliver_batch(base_url, batch, blind=blind)} for batch in batches]
