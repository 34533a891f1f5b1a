"""The run compiles the started processes' sources once, so they do not compile them again."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from certification.bytecode import precompile


def _package(root: Path, name: str) -> Path:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("VALUE = 1\n")
    (package / "mod.py").write_text("def f() -> int:\n    return 2\n")
    return package


def test_missing_bytecode_is_written_for_every_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _package(tmp_path, "rp_bytecode_probe")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert not (package / "__pycache__").exists()
    assert precompile(("rp_bytecode_probe",)) == 1
    tag = sys.implementation.cache_tag
    assert (package / "__pycache__" / f"mod.{tag}.pyc").is_file()
    assert (package / "__pycache__" / f"__init__.{tag}.pyc").is_file()
    assert "rp_bytecode_probe" not in sys.modules  # found by location, never imported


def test_an_unknown_package_and_a_broken_source_are_not_counted(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    package = _package(tmp_path, "rp_bytecode_broken")
    (package / "bad.py").write_text("def (:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert precompile(("rp_no_such_package_here",)) == 0
    assert precompile(("rp_bytecode_broken",)) == 0  # a syntax error is the sink's to report, not ours
