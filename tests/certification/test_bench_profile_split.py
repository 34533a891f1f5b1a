"""The profile split charges code of no area (built-ins, stdlib helpers, shared sink helpers) to
the area of whoever called it, in proportion to each caller's time in it."""

from __future__ import annotations

import cProfile
import importlib.util
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from certification.bench import profile_split

SHARED = (
    "import time\n"
    "def spin(seconds, depth=3):\n"
    "    if depth:\n"
    "        return spin(seconds, depth - 1)  # recursive, like the canonical encoder\n"
    "    end = time.process_time() + seconds\n"
    "    while time.process_time() < end:\n"
    "        pass\n"
)
JOURNAL = "from helpers.shared import spin\ndef commit():\n    spin(0.06)\n"
TRANSPORT = "from helpers.shared import spin\ndef send():\n    spin(0.02)\n"


@pytest.fixture
def toy_sink(tmp_path: Path) -> Iterator[Path]:
    for package, module, text in (("helpers", "shared", SHARED), ("sink/journal", "store", JOURNAL),
                                  ("sink/transport", "wire", TRANSPORT)):
        (tmp_path / "toy" / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / "toy" / package / f"{module}.py").write_text(text)
    sys.path.insert(0, str(tmp_path / "toy"))
    yield tmp_path
    sys.path.remove(str(tmp_path / "toy"))
    for name in [n for n in sys.modules if n.split(".")[0] in ("helpers", "sink") and "toy" in str(
            getattr(sys.modules[n], "__file__", ""))]:
        del sys.modules[name]


def test_a_shared_helper_is_charged_to_its_callers_areas(toy_sink: Path) -> None:
    # The toy's own "sink" package would shadow the real one: load its modules by file path.
    journal = _load(toy_sink / "toy" / "sink" / "journal" / "store.py", "toy_journal_store")
    transport = _load(toy_sink / "toy" / "sink" / "transport" / "wire.py", "toy_transport_wire")
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    journal.commit()
    transport.send()
    profiler.disable()
    out = toy_sink / "toy.pstats"
    profiler.dump_stats(str(out))
    shares = profile_split.split(out)
    # spin (a helper of no area) ran 60 ms for the journal and 20 ms for the transport: 3:1
    assert shares["journal"] > 0.6 and shares["transport"] > 0.15
    assert 2.0 < shares["journal"] / shares["transport"] < 4.5
    assert shares[profile_split.OTHER] < 0.1 and abs(sum(shares.values()) - 1.0) < 0.01


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
