"""A catalog row whose rule the fault proxy refuses is invalid input (exit 2, the row named), not a
harness outage, and no evidence is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from certification.scenarios import BUNDLED

CERTIFY = str(Path(sys.executable).with_name("certify"))
SCENARIOS = BUNDLED.parent


def test_a_rule_the_proxy_refuses_is_invalid_input_naming_the_row(tmp_path: Path) -> None:
    catalog = tmp_path / "bad.yaml"
    catalog.write_text(f"""schema_id: restproof.fault_matrix_scenarios.v2
family: sync_batch
workload: {SCENARIOS / 'workloads' / 'measurements-sync.yaml'}
receiver: {SCENARIOS / 'receivers' / 'json-batches.yaml'}
binding: mock_measurements
scope: {{from: "2026-03-01", to: "2026-03-05"}}
rows:
  - id: cut.connect.matching
    fault: {{type: proxy, rule: {{match: {{method: POST}}, fire: once, fault: {{action: close, phase: connect}}}}}}
    expect: {{end: [first_run, recovery]}}
""")
    out = tmp_path / "out"
    done = subprocess.run([CERTIFY, "run", "--catalog", str(catalog), "--sink", "naive-retry", "--parallel", "1",
                           "--identity-examples", "0", "--worker-isolation", "process", "--out", str(out)],
                          check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "certify.invalid_rule" in done.stderr and "sync.cut.connect.matching" in done.stderr
    assert not (out / "test_artifacts").exists()
