"""Plumbing shared by the gallery's Python sinks (standard library only: these sinks are written
outside restproof, the way a user writes theirs; they import nothing of it)."""

import http.client
import json
import pathlib
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


def load_bundle(directory):
    """The exported requests of the interval: [(child, body bytes)]."""
    base = pathlib.Path(directory)
    bundle = json.loads((base / "bundle.json").read_text())
    return bundle, [(child, (base / "bodies" / child["body_file"]).read_bytes()) for child in bundle["children"]]


def report(units):
    print(json.dumps({"units": units}))
    return 0 if all(unit["status"] == "completed" for unit in units) else 4
