"""The benches' naive baselines: a plain httpx loop over a ``delivery bundle``'s exact requests.

* ``loop``: for each child, read its sealed body file and POST it with the headers the sink
  would send (the fence key included, so the receiver does the same work for both): no journal,
  no markers, no verification, no retries. What throughput costs without any durability.
* ``read-all``: the "read everything, post it" sink: every body is read into memory first, then
  posted; its peak RSS grows with the source, which is what the RSS bench sets beside the sink's.

Usage: ``python -m certification.bench.naive_loop loop|read-all --bundle DIR --url URL``.
Prints ``{"units": [...]}`` (the sinks-under-test ``units_json`` result); exit 0 when every
request got a 2xx, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import httpx


def _post(client: httpx.Client, child: dict[str, Any], body: bytes) -> str:
    headers = {name: value for name, value in child["headers"]}
    headers["Content-Type"] = child["content_type"]
    response = client.request(child["method"], child["path_and_query"], content=body, headers=headers)
    return "completed" if response.is_success else "failed"


def deliver(bundle: Path, url: str, mode: str) -> list[dict[str, str]]:
    document = json.loads((bundle / "bundle.json").read_text())
    children: list[dict[str, Any]] = document["children"]
    bodies = [(bundle / "bodies" / c["body_file"]).read_bytes() for c in children] if mode == "read-all" else None
    units = []
    with httpx.Client(base_url=url, timeout=httpx.Timeout(120.0)) as client:
        for index, child in enumerate(children):
            body = bodies[index] if bodies is not None else (bundle / "bodies" / child["body_file"]).read_bytes()
            units.append({"scope_from": child["scope_from"], "scope_to": child["scope_to"],
                          "status": _post(client, child, body)})
    return units


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="naive-loop")
    parser.add_argument("mode", choices=["loop", "read-all"])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--url", required=True)
    args = parser.parse_args(argv)
    try:
        units = deliver(args.bundle, args.url, args.mode)
    except (httpx.HTTPError, OSError, ValueError, KeyError) as exc:
        sys.stderr.write(f"naive-loop: {type(exc).__name__}\n")
        return 1
    sys.stdout.write(json.dumps({"units": units}, sort_keys=True) + "\n")
    return 0 if all(unit["status"] == "completed" for unit in units) else 1


if __name__ == "__main__":
    raise SystemExit(main())
