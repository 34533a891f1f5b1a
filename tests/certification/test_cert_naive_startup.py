"""The naive baselines start without httpx (docs/certification.md, "The full catalog's time"): about
840 baseline processes in a full run each paid about 0.16 s of CPU for it. Their HTTP is h11's, the
parser under httpx, so they judge a broken answer as an httpx client would (test_cert_naive_client.py)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import certification.naive_sinks
print(json.dumps(sorted(m for m in ("httpx", "httpcore", "rich", "click", "pygments", "typer", "pydantic")
                        if m in sys.modules)))
"""


def test_a_baseline_process_loads_no_http_client_library_but_h11() -> None:
    answer = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(answer.stdout) == []
