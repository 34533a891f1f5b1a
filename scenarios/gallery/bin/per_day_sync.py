#!/usr/bin/env python3
"""A correct sink written outside restproof, in plain Python: one request per day, CSV bodies built
from the dataset it reads itself, a deterministic Idempotency-Key per day, same-key retries only,
and a read-only summary check before it calls a day done.

Usage: per_day_sync.py WORKLOAD SCOPE_FROM SCOPE_TO RECEIVER_URL
Prints {"units": [{"scope_from", "scope_to", "status"}]}; exit 0 when every day is done, 4 otherwise.
"""

import csv
import datetime
import hashlib
import io
import pathlib
import sys
import time

import yaml
from gallery_common import TRANSPORT_ERRORS, call, report

ATTEMPTS = 6


def days(start, end):
    first, last = datetime.date.fromisoformat(start), datetime.date.fromisoformat(end)
    return [(first + datetime.timedelta(days=n)).isoformat() for n in range((last - first).days)]


def summary_rows(base, resource, day, next_day):
    for _ in range(ATTEMPTS):
        try:
            status, document, _ = call("GET", f"{base}/mock/v1/resources/{resource}/summary"
                                              f"?range_start={day}&range_end={next_day}")
        except TRANSPORT_ERRORS:
            time.sleep(0.5)
            continue
        if status == 200 and isinstance(document, dict):
            return document.get("row_count")
        time.sleep(0.5)
    return None


def deliver_day(target, day, next_day, header, rows):
    base, resource, route = target
    body = io.StringIO()
    writer = csv.writer(body, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    data = body.getvalue().encode()
    key = hashlib.sha256(f"{route}|{resource}|{day}".encode()).hexdigest()
    url = f"{base}/mock/v1/resources/{resource}/batches?range_start={day}&range_end={next_day}"
    for attempt in range(ATTEMPTS):
        try:
            status, document, headers = call("POST", url, data, {"Content-Type": "text/csv", "Idempotency-Key": key})
        except TRANSPORT_ERRORS:
            time.sleep(0.3 * (attempt + 1))  # the same key again: the receiver deduplicates it
            continue
        if status in (200, 201) and isinstance(document, dict):
            if document.get("rejected_rows"):
                return "partial"
            if document.get("accepted_rows") == len(rows):
                return "completed"
            break  # counts that contradict what was sent: prove it by the summary below
        if status == 409 and isinstance(document, dict) and document.get("receipt_id"):
            break  # our own earlier request was applied: prove it by the summary below
        if status in (409, 413, 429, 500, 502, 503, 504):
            delay = headers.get("Retry-After") if headers else None
            time.sleep(float(delay) if delay and delay.isdigit() else 0.3 * (attempt + 1))
            continue
        return "failed"
    held = summary_rows(base, resource, day, next_day)
    return "completed" if held == len(rows) else "unknown"


def main(argv):
    workload_path, scope_from, scope_to, base = pathlib.Path(argv[0]), argv[1], argv[2], argv[3].rstrip("/")
    workload = yaml.safe_load(workload_path.read_text())
    mapping = yaml.safe_load((workload_path.parent.parent / "mappings" /
                              f"{workload['sink']['payload']['mapping_ref']}.yaml").read_text())
    columns = [field.get("source", field["name"]) for field in mapping["fields"]]
    header = [field["name"] for field in mapping["fields"]]
    scope_field = mapping["scope_field"]
    with open(workload_path.parent / workload["source"]["path"], newline="", encoding="utf-8-sig") as handle:
        source = list(csv.DictReader(handle))
    resource, route = workload["sink"]["resource"], workload["logical_route_id"]
    units = []
    span = days(scope_from, scope_to)
    for index, day in enumerate(span):
        next_day = span[index + 1] if index + 1 < len(span) else scope_to
        rows = [[record[column] for column in columns] for record in source if record[scope_field] == day]
        status = deliver_day((base, resource, route), day, next_day, header, rows)
        units.append({"scope_from": day, "scope_to": next_day, "status": status})
    return report(units)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
