"""``python -m toy_sink BUNDLE_DIR RECEIVER_URL [--blind]``: deliver the batches of a request bundle
(restproof's ``{bundle_dir}``: ``bundle.json`` and ``bodies/``), print ``{"units": [...]}`` and exit
0 when every batch is completed, 4 otherwise (some effect unknown or refused)."""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from toy_sink import Batch, deliver


def load_batches(directory: pathlib.Path) -> list[Batch]:
    bundle = json.loads((directory / "bundle.json").read_text())
    return [Batch(child["method"], child["path_and_query"], child["content_type"],
                  (directory / "bodies" / child["body_file"]).read_bytes(), child["receiver_mutation_key"],
                  child["scope_from"], child["scope_to"]) for child in bundle["children"]]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="toy_sink")
    parser.add_argument("bundle", type=pathlib.Path)
    parser.add_argument("url")
    parser.add_argument("--blind", action="store_true", help="retry any error without a key (the bug)")
    args = parser.parse_args(argv)
    units = deliver(args.url, load_batches(args.bundle), blind=args.blind)
    print(json.dumps({"units": units}))
    return 0 if all(unit["status"] == "completed" for unit in units) else 4


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
