"""Tests of the pytest plugin. They run pytest on the example repository layout of
docs/pytest-plugin.md (``example/``, copied per test) or on small test files written for the test,
always in a pytest process of its own: a plugin's options, collection, fixtures and interrupts are
only real there. ``example/`` itself is not part of this suite's collection."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

collect_ignore = ["example"]
EXAMPLE = Path(__file__).resolve().parent / "example"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of the example layout (a sink developer's repository)."""
    target = tmp_path / "toy-repo"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return target
