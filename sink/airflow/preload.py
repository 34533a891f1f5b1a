"""Load the delivery runtime once per Airflow worker process, before it forks its tasks.

A deferred delivery comes back to the worker in ``execute_complete``, in a fresh task process.
Airflow on Linux starts that process with a bare ``os.fork`` of the executor's worker process
(LocalExecutor and CeleryExecutor alike), so whatever that process has already imported, every
task process has for free. Importing the runtime (the journal adapters, the HTTP transport, the
contracts) and loading the design contract costs about a second of CPU: paid once per worker
process here, instead of once per task execution in the operator.

Use it from ``airflow_local_settings.py`` (Airflow imports that module in every one of its
processes, from ``$AIRFLOW_HOME/config``)::

    from sink.airflow.preload import preload_runtime
    preload_runtime()

Only the processes that run tasks load it (``airflow scheduler`` with the LocalExecutor,
``airflow celery worker``, ``airflow standalone``); the API server, triggerer and DAG processor
do not need the synchronous runtime, and are left alone. ``preload_runtime(force=True)`` loads it
in any process. Preloading never opens a journal, a connection or a file beyond the modules and
the bundled contract, so nothing is shared across the fork but immutable code and data.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

TASK_RUNNING_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("scheduler",), ("standalone",), ("celery", "worker"), ("edge", "worker"), ("worker",))
"""Airflow CLI commands whose process forks task processes."""

RUNTIME_MODULES = (
    "sink.runtime.service",
    "sink.runtime.composition",
    "sink.compiler",
    "sink.journal.sqlite.adapter",
    "sink.journal.postgres.adapter",
    "sink.transport.httpx_transport",
)


def runs_tasks(argv: Sequence[str]) -> bool:
    """Whether this Airflow CLI invocation is one that forks task processes."""
    words = [word for word in argv[1:] if not word.startswith("-")]
    return any(tuple(words[:len(command)]) == command for command in TASK_RUNNING_COMMANDS)


def preload_runtime(*, force: bool = False, argv: Sequence[str] | None = None) -> tuple[str, ...]:
    """Import the runtime and load the design contract; returns the modules loaded (empty when
    this process runs no tasks and ``force`` is false)."""
    if not force and not runs_tasks(sys.argv if argv is None else argv):
        return ()
    loaded = []
    for name in RUNTIME_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue  # a driver not installed here (psycopg, SQLite journal): the task says so if it needs it
        loaded.append(name)
    from sink.design.query import load_design_contract  # noqa: PLC0415

    load_design_contract()
    _build_contract_models()
    return tuple(loaded)


def _build_contract_models() -> int:
    """Build every contract model now (they are built on first use otherwise: ``defer_build``),
    so a forked task validates without building one."""
    from sink.contracts._base import ContractModel  # noqa: PLC0415

    pending: list[type[ContractModel]] = list(ContractModel.__subclasses__())
    seen: set[type[ContractModel]] = set()
    while pending:
        model = pending.pop()
        if model in seen:
            continue
        seen.add(model)
        pending.extend(model.__subclasses__())
        model.model_rebuild()
    return len(seen)
