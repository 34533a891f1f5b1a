"""The runtime preload: only task-running Airflow processes load it, and what it loads is what a
resume needs (a fresh process that preloaded imports none of the runtime again)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sink.airflow.preload import RUNTIME_MODULES, preload_runtime, runs_tasks


@pytest.mark.parametrize("argv", [
    ["airflow", "scheduler"], ["/venv/bin/airflow", "scheduler", "--pid", "x"], ["airflow", "standalone"],
    ["airflow", "celery", "worker"], ["airflow", "celery", "worker", "-q", "default"], ["airflow", "edge", "worker"],
])
def test_task_running_processes_preload(argv: list[str]) -> None:
    assert runs_tasks(argv)


@pytest.mark.parametrize("argv", [
    ["airflow", "triggerer"], ["airflow", "api-server"], ["airflow", "dag-processor"], ["airflow", "webserver"],
    ["airflow", "celery", "flower"], ["airflow", "tasks", "run"], ["airflow"], [], ["python", "-c"],
])
def test_other_processes_do_not(argv: list[str]) -> None:
    assert not runs_tasks(argv)
    assert preload_runtime(argv=argv) == ()


_PROBE = r"""
import json, sys
from sink.airflow.preload import preload_runtime
before = set(sys.modules)
loaded = preload_runtime(force=sys.argv[1] == "force", argv=["airflow", sys.argv[1]])
after = set(sys.modules)
import sink.runtime.service, sink.runtime.composition, sink.design.query
from sink.design.query import _bundled
from sink.contracts._base import ContractModel
models, pending = [], list(ContractModel.__subclasses__())
while pending:
    model = pending.pop()
    models.append(model)
    pending.extend(model.__subclasses__())
print(json.dumps({"loaded": loaded, "new": len(after - before),
                  "later": len(set(sys.modules) - after), "contract_cached": _bundled.cache_info().currsize,
                  "models": len(models), "unbuilt": sum(not m.__pydantic_complete__ for m in models)}))
"""


def _probe(role: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _PROBE, role], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_preload_loads_the_runtime_and_the_contract_in_a_scheduler() -> None:
    result = _probe("scheduler")
    assert set(result["loaded"]) == set(RUNTIME_MODULES)
    assert result["later"] == 0  # the runtime's entry modules: nothing left to import
    assert result["contract_cached"] == 1
    assert result["models"] > 20
    assert result["unbuilt"] == 0


def test_preload_is_a_no_op_in_a_triggerer() -> None:
    result = _probe("triggerer")
    assert result["loaded"] == []
    assert result["new"] == 0
    assert result["later"] > 0  # the runtime was left for the task to import
    assert result["contract_cached"] == 0
    assert result["unbuilt"] > 0  # built on first use, in the process that uses them


def test_acceptance_stack_writes_local_settings_only_when_preloading(tmp_path: Path) -> None:
    from certification.airflow.stack import AirflowStack

    def settings(preload: bool) -> Path:
        home = tmp_path / f"home-{preload}"
        AirflowStack.configure(tmp_path / "venv", home, pg_host="127.0.0.1", pg_port=5432, database="meta",
                               dags_folder=tmp_path / "dags", version=(3, 2), extra_env={}, preload=preload)
        return home / "config" / "airflow_local_settings.py"

    written = settings(True)
    namespace: dict[str, object] = {}
    exec(compile(written.read_text(encoding="utf-8"), str(written), "exec"), namespace)
    assert namespace["preload_runtime"] is preload_runtime
    assert not settings(False).exists()
