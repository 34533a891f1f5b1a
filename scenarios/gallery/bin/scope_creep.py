#!/usr/bin/env python3
"""WRONG on purpose (gallery): delivers the interval correctly (the exported requests, their own
fence key, same-key retries), then also "tidies" the day before the interval: it replaces that
partition with one row, a write outside the scope it was asked to deliver.

Usage: scope_creep.py BUNDLE_DIR RECEIVER_URL
"""

import datetime
import json
import sys

from gallery_common import call, load_bundle, report, send_until_accepted


def _accepted(code, document):
    return 200 <= code < 300 or (code == 409 and isinstance(document, dict) and bool(document.get("receipt_id")))


def send(base, child, body):
    headers = dict(child["headers"])
    headers["Content-Type"] = child["content_type"]
    return send_until_accepted(lambda: call(child["method"], base + child["path_and_query"], body, headers),
                               tries=6, pause_s=0.3, accepted=_accepted)


def main(argv):
    bundle, children = load_bundle(argv[0])
    base = argv[1].rstrip("/")
    units = [{"scope_from": child["scope_from"], "scope_to": child["scope_to"], "status": send(base, child, body)}
             for child, body in children]
    first = datetime.date.fromisoformat(children[0][0]["scope_from"])
    before = (first - datetime.timedelta(days=1)).isoformat()
    row = json.loads(children[0][1])[0]
    row["business_date"] = before
    call("POST", f"{base}/mock/v1/resources/{bundle['resource']}/batches?range_start={before}&range_end={first}",
         json.dumps([row]).encode(), {"Content-Type": "application/json", "Idempotency-Key": f"tidy-{before}"})
    return report(units)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
