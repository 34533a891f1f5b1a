#!/usr/bin/env python3
"""WRONG on purpose (gallery): retries every error with a FRESH Idempotency-Key per attempt, as a
client that makes its key per HTTP call instead of per delivery does. A resend after a lost
response is then a new request to the receiver: a duplicate, and an unproved resend on the wire.

Usage: fresh_key_retry.py BUNDLE_DIR RECEIVER_URL
"""

import sys
import uuid

from gallery_common import call, load_bundle, report, send_until_accepted


def main(argv):
    _, children = load_bundle(argv[0])
    units = []
    for child, body in children:
        def attempt(child=child, body=body):
            headers = {"Content-Type": child["content_type"], "Idempotency-Key": f"k-{uuid.uuid4().hex}"}
            return call(child["method"], argv[1].rstrip("/") + child["path_and_query"], body, headers)

        status = send_until_accepted(attempt)
        units.append({"scope_from": child["scope_from"], "scope_to": child["scope_to"], "status": status})
    return report(units)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
