"""Compile the bytecode of the processes a run starts, once, before the matrix.

Every row starts fresh Python processes (the reference sink, receivers, proxies). Where
``PYTHONDONTWRITEBYTECODE`` is set (as on the CI machines) or the install is editable, each of them
would compile the same sources again: about 0.3 s of CPU per sink process, measured with
``benchmarks/bench_startup.py``. Compiling once here writes what they then only read. A location
that cannot be written (a read-only install) is skipped silently: it only costs time.
"""

from __future__ import annotations

import compileall
import importlib.util

STARTED_PACKAGES = ("sink", "mock_receiver", "fault_proxy")
"""The packages of the processes a run starts; found by location, never imported here."""


def precompile(packages: tuple[str, ...] = STARTED_PACKAGES) -> int:
    """Compile each package's sources where their bytecode is missing or stale; the count of
    package locations compiled without an error."""
    compiled = 0
    for name in packages:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            if compileall.compile_dir(location, quiet=2, workers=1):
                compiled += 1
    return compiled
