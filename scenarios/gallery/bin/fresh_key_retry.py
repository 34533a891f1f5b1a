#!/usr/bin/env python3
"""WRONG on purpose (gallery): retries every error with a FRESH Idempotency-Key per attempt, as a
client that makes its key per HTTP call instead of per delivery does. A resend after a lost
response is then a new request to the receiver: a duplicate, and an unproved resend on the wire.

Usage: fresh_key_retry.py BUNDLE_DIR RECEIVER_URL
"""

import sys
import time
import uuid

from gallery_common import TRANSPORT_ERRORS, call, load_bundle, report


def main(argv):
    _, children = load_bundle(argv[0])
    units = []
    for child, body in children:
        status = "failed"
        for _ in range(4):
            headers = {"Content-Type": child["content_type"], "Idempotency-Key": f"k-{uuid.uuid4().hex}"}
            try:
                code, _, _ = call(child["method"], argv[1].rstrip("/") + child["path_and_query"], body, headers)
            except TRANSPORT_ERRORS:
                time.sleep(0.2)
                continue
            if 200 <= code < 300:
                status = "completed"
                break
            time.sleep(0.2)
        units.append({"scope_from": child["scope_from"], "scope_to": child["scope_to"], "status": status})
    return report(units)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
