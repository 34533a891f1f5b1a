"""Every ```python block of docs/api.md runs, each in a fresh interpreter from the repository root
(as a reader runs it from a checkout), so the page cannot rot: a renamed name, a changed result or a
wrong claim fails here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api.md"
_FENCE = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def _examples() -> list[tuple[str, str]]:
    """(section heading + ordinal, code) of every python block, in page order."""
    text = DOC.read_text(encoding="utf-8")
    found: list[tuple[str, str]] = []
    counts: dict[str, int] = {}
    for match in _FENCE.finditer(text):
        headings = re.findall(r"^## `?([^`\n]+)`?$", text[:match.start()], re.M)
        section = headings[-1] if headings else "intro"
        counts[section] = counts.get(section, 0) + 1
        found.append((f"{section}-{counts[section]}", match.group(1)))
    return found


EXAMPLES = _examples()


def test_the_page_has_an_example_for_each_surface() -> None:
    sections = {name.rsplit("-", 1)[0] for name, _ in EXAMPLES}
    assert sections == {"certification", "mock_receiver", "fault_proxy", "sink.api", "sink.testing"}


@pytest.mark.parametrize(("name", "code"), EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_the_example_runs(name: str, code: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"


def test_a_broken_example_would_fail() -> None:
    """The runner itself: an example whose assertion does not hold is reported, not swallowed."""
    done = subprocess.run([sys.executable, "-c", "from sink.testing import ScriptedTransport\n"
                                                 "assert ScriptedTransport().remaining == 1"],
                          check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "AssertionError" in done.stderr
