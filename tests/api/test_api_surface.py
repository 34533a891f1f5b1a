"""The public surface: each package's ``__all__`` resolves, is loaded lazily, matches what mypy sees,
never shadows a submodule, and is the very list docs/api.md documents."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api.md"
SURFACES = ("certification", "mock_receiver", "fault_proxy", "sink.api")
HEAVY = ("mitmproxy", "fastapi", "starlette", "httpx", "uvicorn")
# What each surface must not pull in on import: the heavy libraries, and for the sink the runtime
# and the journal adapters (the CLI of every part imports these packages at start-up).
FORBIDDEN = {
    "certification": (*HEAVY, "certification.services", "certification.matrix", "sink.runtime"),
    "mock_receiver": (*HEAVY, "mock_receiver.app", "mock_receiver.ledger"),
    "fault_proxy": (*HEAVY, "fault_proxy.server", "fault_proxy.rules"),
    "sink.api": (*HEAVY, "sink.runtime", "sink.journal", "sink.compiler"),
}


def _source(module: ModuleType) -> Path:
    assert module.__file__ is not None
    return Path(module.__file__)


def _exports(module: ModuleType) -> dict[str, tuple[str, str]]:
    table = module._EXPORTS
    assert isinstance(table, dict)
    return table


@pytest.mark.parametrize("name", SURFACES)
def test_importing_a_surface_loads_nothing_heavy(name: str) -> None:
    probe = (f"import sys, json; import {name}; "
             f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {json.dumps(list(HEAVY))} "
             f"or m in {json.dumps(list(FORBIDDEN[name]))} or any(m.startswith(f + '.') for f in "
             f"{json.dumps(list(FORBIDDEN[name]))}))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True,
                          cwd=ROOT)
    assert json.loads(done.stdout) == []


def test_the_doubles_import_neither_pytest_nor_a_network_library() -> None:
    probe = ("import sys, sink.testing; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest', 'httpx', 'httpcore')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True,
                          cwd=ROOT)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("name", SURFACES)
def test_every_listed_name_resolves_in_a_fresh_interpreter(name: str) -> None:
    """A fresh process, so a name that only resolves because another test imported its module fails."""
    probe = (f"import {name} as m\nmissing = []\n"
             "for n in m.__all__:\n"
             "    try:\n        getattr(m, n)\n"
             "    except Exception as e:\n        missing.append(f'{n}: {type(e).__name__}: {e}')\n"
             "print('\\n'.join(missing))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True,
                          cwd=ROOT)
    assert done.stdout.strip() == ""


@pytest.mark.parametrize("name", SURFACES)
def test_all_is_the_export_table_and_resolves_to_its_target(name: str) -> None:
    module = importlib.import_module(name)
    table = _exports(module)
    assert len(module.__all__) == len(set(module.__all__))
    assert set(table) <= set(module.__all__)
    assert set(module.__all__) - set(table) <= {"PRODUCER"}  # the one eager constant
    for public, (source, attribute) in table.items():
        assert getattr(module, public) is getattr(importlib.import_module(source), attribute), public
    assert set(dir(module)) >= set(module.__all__)


@pytest.mark.parametrize("name", SURFACES)
def test_an_unknown_name_is_an_attribute_error(name: str) -> None:
    module = importlib.import_module(name)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018 - the access is the test
    assert not hasattr(module, "_private_helper")


@pytest.mark.parametrize("name", SURFACES)
def test_the_type_checking_block_declares_exactly_the_lazy_names(name: str) -> None:
    """mypy reads the ``if TYPE_CHECKING:`` imports; the runtime reads ``_EXPORTS``. They must agree."""
    module = importlib.import_module(name)
    tree = ast.parse(_source(module).read_text(encoding="utf-8"))
    declared: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module is not None
                for alias in statement.names:
                    declared[alias.asname or alias.name] = (statement.module, alias.name)
    assert declared == _exports(module)


@pytest.mark.parametrize("name", ["certification", "mock_receiver", "fault_proxy"])
def test_no_public_name_is_also_a_submodule(name: str) -> None:
    """Importing ``pkg.x`` sets the attribute ``pkg.x`` to the module, replacing a lazy export ``x``."""
    module = importlib.import_module(name)
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    assert not submodules & set(module.__all__)


def _documented() -> dict[str, set[str]]:
    """The names docs/api.md lists: per ``## `package` `` section, the first column of its tables."""
    names: dict[str, set[str]] = {}
    current: str | None = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^## `([a-z_.]+)`", line)
        if heading:
            current = heading.group(1)
            names.setdefault(current, set())
            continue
        if line.startswith("## "):
            current = None
        cell = re.match(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|", line)
        if current is not None and cell:
            names[current].add(cell.group(1))
    return names


@pytest.mark.parametrize("name", [*SURFACES, "sink.testing"])
def test_the_docs_list_exactly_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    documented = _documented()
    assert name in documented, f"docs/api.md has no section for {name}"
    assert documented[name] == set(module.__all__)
