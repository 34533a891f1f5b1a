"""The end-to-end runtime tests reuse the supervisor tests' receiver + proxy harness."""

from __future__ import annotations

import sys
from pathlib import Path

_SUPERVISOR_TESTS = str(Path(__file__).resolve().parents[1] / "supervisor")
if _SUPERVISOR_TESTS not in sys.path:
    sys.path.insert(0, _SUPERVISOR_TESTS)
