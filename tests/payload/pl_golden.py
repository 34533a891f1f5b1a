"""Golden codec variants: name -> (workload, body override, mapping override)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from sink.artifacts import LocalArtifactStore
from tests.payload.pl_helpers import GOLDEN_RECORDS, KEEP_EMPTY_MAPPING, bundled_plan, seal, variant

PART = "payload_part"
VARIANTS: dict[str, tuple[str, dict[str, Any] | None, dict[str, Any] | None]] = {
    "multipart_csv_gzip6": ("measurements-async", None, None),
    "multipart_csv_gzip1_bom_lf_nullN": ("measurements-async", {PART: {
        "gzip_level": 1, "csv_dialect": {"bom": True, "line_terminator": "lf", "null_text": "\\N"}}},
        KEEP_EMPTY_MAPPING),
    "multipart_csv_plain_semicolon_10": ("measurements-async", {PART: {
        "compression": "none", "content_type": "text/csv",
        "csv_dialect": {"delimiter": ";", "boolean_text": "1_0", "header": False}}}, None),
    "multipart_ndjson_gzip9": ("measurements-async", {PART: {
        "format": "ndjson", "content_type": "application/gzip", "gzip_level": 9,
        "filename": "{receiver_mutation_key}.ndjson.gz",
        "json_format": {"null": "omit"}}}, KEEP_EMPTY_MAPPING),
    "json_array": ("measurements-sync", None, None),
    "json_array_numbers_ascii": ("measurements-sync",
                                 {"json_format": {"decimal": "number", "unicode": "ascii_escaped"}},
                                 KEEP_EMPTY_MAPPING),
    "ndjson_gzip": ("measurements-sync", {"type": "ndjson", "compression": "gzip"}, None),
    "csv_body_gzip": ("measurements-sync", {"type": "csv", "compression": "gzip"}, None),
}


def digests() -> dict[str, list[list[str]]]:
    """name -> per child [decoded digest, payload digest, wire digest]."""
    out: dict[str, list[list[str]]] = {}
    for name, (workload, body, mapping) in VARIANTS.items():
        plan = bundled_plan(workload)
        if body is not None or mapping is not None:
            plan = variant(plan, body=body, mapping=mapping)
        with tempfile.TemporaryDirectory() as scratch:
            topology = seal(plan, LocalArtifactStore(Path(scratch)), GOLDEN_RECORDS)
            out[name] = [[c.decoded_digest, c.payload_digest, c.wire_digest] for c in topology.children]
    return out


if __name__ == "__main__":
    json.dump(digests(), sys.stdout, indent=1, sort_keys=True)
