"""Naive baseline sinks: what a retried orchestrator task does (ARCHITECTURE.md, "Evidence rules").

They exist to prove the checkers can fail. Both POST the exact sealed requests of a
``delivery bundle`` and retry on ANY error, like an HTTP operator under task retries:

* ``retry``: no idempotency key at all; a multipart file gets a fresh upload name per attempt
  (as a task that names its file after the attempt would), so no receiver fence can help it.
* ``idempotency-key``: a client-side key per child, kept in process memory only (no journal):
  retries inside one process reuse it, a restarted process makes a new one.

Neither inherits the bundle's own fence: the ``Idempotency-Key`` header and an AIP-155 ``request_id``
query field are dropped. A keyed baseline sends its key the way the receiver takes one (quoted when the
bundle's header was an RFC 8941 String, as a ``request_id`` UUID when the bundle carried one), so the
receiver reads it and the baseline is judged on its key, not refused for its form.

Usage: ``python -m certification.naive_sinks retry|idempotency-key --bundle DIR --url URL``.
Prints ``{"units": [{"scope_from", "scope_to", "status"}]}``; exit 0 when every request got a 2xx.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from certification.naive_http import ExchangeFailed, NaiveClient

ATTEMPTS = 4
PAUSE_S = 0.2
FENCE_HEADERS = frozenset({"idempotency-key"})
FENCE_QUERY = frozenset({"request_id", "requestid"})


def _without_request_id(path_and_query: str) -> tuple[str, bool]:
    path, _, query = path_and_query.partition("?")
    pairs = [pair for pair in query.split("&") if pair]
    kept = [pair for pair in pairs if pair.partition("=")[0].lower() not in FENCE_QUERY]
    return path + ("?" + "&".join(kept) if kept else ""), len(kept) != len(pairs)


def _request(child: dict[str, Any], body: bytes, key: str | None) -> tuple[str, dict[str, str], bytes]:
    headers = {name: value for name, value in child["headers"] if name.lower() not in FENCE_HEADERS}
    quoted = any(name.lower() in FENCE_HEADERS and value.startswith('"') for name, value in child["headers"])
    target, had_request_id = _without_request_id(str(child["path_and_query"]))
    headers["Content-Type"] = child["content_type"]
    fence = str(child["receiver_mutation_key"])
    upload = key or f"upload-{uuid.uuid4().hex}"
    if child["content_type"].startswith("multipart/") and fence.encode() in body:
        body = body.replace(fence.encode(), upload.encode())  # the file name the task chose
    if key is not None:
        headers["Idempotency-Key"] = f'"{key}"' if quoted else key
        if had_request_id:
            request_id = uuid.UUID(hex=key.removeprefix("naive-"))  # the per-process key, as a UUID
            target += ("&" if "?" in target else "?") + f"request_id={request_id}"
    return target, headers, body


def deliver(bundle: Path, url: str, mode: str) -> tuple[list[dict[str, str]], bool]:
    document = json.loads((bundle / "bundle.json").read_text())
    units, all_ok = [], True
    client = NaiveClient(url)
    try:
        for child in document["children"]:
            raw = (bundle / "bodies" / child["body_file"]).read_bytes()
            key = f"naive-{uuid.uuid4().hex}" if mode == "idempotency-key" else None
            status = "failed"
            for _ in range(ATTEMPTS):
                target, headers, body = _request(child, raw, key)
                try:
                    code = client.request(child["method"], target, headers, body)
                except ExchangeFailed:
                    time.sleep(PAUSE_S)
                    continue
                if 200 <= code < 300:
                    status = "completed"
                    break
                time.sleep(PAUSE_S)
            all_ok = all_ok and status == "completed"
            units.append({"scope_from": child["scope_from"], "scope_to": child["scope_to"], "status": status})
    finally:
        client.close()
    return units, all_ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="naive-sink")
    parser.add_argument("mode", choices=["retry", "idempotency-key"])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--url", required=True)
    args = parser.parse_args(argv)
    units, ok = deliver(args.bundle, args.url, args.mode)
    sys.stdout.write(json.dumps({"units": units}, sort_keys=True) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
