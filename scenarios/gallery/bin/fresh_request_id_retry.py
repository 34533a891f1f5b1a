#!/usr/bin/env python3
"""WRONG on purpose (gallery): retries every error with a FRESH AIP-155 request_id (a random UUID) per
attempt, as a client that names each HTTP call instead of each mutation does. Against a receiver that
deduplicates on request_id, a resend after a lost response is then a new request: a duplicate, and
an unproved resend on the wire.

Usage: fresh_request_id_retry.py BUNDLE_DIR RECEIVER_URL
"""

import sys
import uuid
from urllib.parse import parse_qsl, urlencode, urlsplit

from gallery_common import call, load_bundle, report, send_until_accepted


def with_fresh_request_id(path_and_query):
    split = urlsplit(path_and_query)
    query = [(name, value) for name, value in parse_qsl(split.query) if name not in ("request_id", "requestId")]
    return split.path + "?" + urlencode([*query, ("request_id", str(uuid.uuid4()))])


def main(argv):
    _, children = load_bundle(argv[0])
    units = []
    for child, body in children:
        def attempt(child=child, body=body):
            target = argv[1].rstrip("/") + with_fresh_request_id(child["path_and_query"])
            return call(child["method"], target, body, {"Content-Type": child["content_type"]})

        status = send_until_accepted(attempt)
        units.append({"scope_from": child["scope_from"], "scope_to": child["scope_to"], "status": status})
    return report(units)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
