#!/usr/bin/env python3
"""WRONG on purpose (gallery): uploads each async job and calls it delivered as soon as the receiver
answers 202, without ever polling the job: a job that later fails, ends partial or is cancelled is
reported as a success.

Usage: fire_and_forget.py BUNDLE_DIR RECEIVER_URL
"""

import sys
import time

from gallery_common import TRANSPORT_ERRORS, call, load_bundle, report


def main(argv):
    _, children = load_bundle(argv[0])
    units = []
    for child, body in children:
        status = "failed"
        for _ in range(4):
            try:
                code, document, _ = call(child["method"], argv[1].rstrip("/") + child["path_and_query"], body,
                                         {"Content-Type": child["content_type"]})
            except TRANSPORT_ERRORS:
                time.sleep(0.2)
                continue
            if code == 202 or (code == 409 and isinstance(document, dict) and document.get("job_id")):
                status = "completed"
                break
            time.sleep(0.2)
        units.append({"scope_from": child["scope_from"], "scope_to": child["scope_to"], "status": status})
    return report(units)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
