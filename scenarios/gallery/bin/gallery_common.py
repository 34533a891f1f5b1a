"""Plumbing shared by the gallery's Python sinks (standard library only: these sinks are written
outside restproof, the way a user writes theirs; they import nothing of it)."""

import http.client
import json
import pathlib
import time
import urllib.error
import urllib.request

TRANSPORT_ERRORS = (OSError, http.client.HTTPException)


def call(method, url, body=None, headers=None):
    """(status, JSON document or None, headers); raises one of TRANSPORT_ERRORS on a lost exchange."""
    if not url.startswith(("http://", "https://")):
        raise ValueError("only http(s) receiver URLs")
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})  # noqa: S310 - checked above
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - checked above
            raw, status, answer_headers = response.read(), response.status, response.headers
    except urllib.error.HTTPError as error:
        raw, status, answer_headers = error.read(), error.code, error.headers
    try:
        document = json.loads(raw) if raw else None
    except ValueError:
        document = None
    return status, document, answer_headers


def _answered_2xx(code, _document):
    return 200 <= code < 300


def send_until_accepted(attempt, tries=4, pause_s=0.2, accepted=_answered_2xx):
    """Call ``attempt()`` (one request; each call may build it anew) until an answer is accepted:
    "completed", or "failed" after ``tries``. A transport error and a refused answer are both retried,
    after ``pause_s``: what a task under an orchestrator's retries does."""
    for _ in range(tries):
        try:
            code, document, _ = attempt()
        except TRANSPORT_ERRORS:
            time.sleep(pause_s)
            continue
        if accepted(code, document):
            return "completed"
        time.sleep(pause_s)
    return "failed"


def load_bundle(directory):
    """The exported requests of the interval: [(child, body bytes)]."""
    base = pathlib.Path(directory)
    bundle = json.loads((base / "bundle.json").read_text())
    return bundle, [(child, (base / "bodies" / child["body_file"]).read_bytes()) for child in bundle["children"]]


def report(units):
    print(json.dumps({"units": units}))
    return 0 if all(unit["status"] == "completed" for unit in units) else 4
