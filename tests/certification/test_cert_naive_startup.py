"""The naive baselines start without httpx's command-line client (docs/certification.md, "The full
catalog's time"): about 840 baseline processes in a full run each paid about 0.1 s of CPU for click,
rich and pygments, which no baseline uses. The client itself must still be whole: its errors are
what a baseline retries on."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import certification.naive_sinks as naive
print(json.dumps({"cli_loaded": sorted(m for m in ("rich", "click", "pygments", "typer") if m in sys.modules),
                  "client": hasattr(naive.httpx, "Client"), "errors": issubclass(naive.httpx.ReadError,
                                                                                 naive.httpx.HTTPError)}))
"""


def test_a_baseline_process_loads_no_command_line_client() -> None:
    answer = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    facts = json.loads(answer.stdout)
    assert facts == {"cli_loaded": [], "client": True, "errors": True}
