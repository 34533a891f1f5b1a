"""Import hygiene: the base install never imports Airflow; the trigger's module imports neither
the delivery runtime nor a synchronous HTTP client when Airflow loads it (its heavy imports happen
in ``run``, on the triggerer); the operator's module keeps DAG parsing free of the runtime."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAKE = str(Path(__file__).resolve().parent)


def _modules_after(code: str) -> set[str]:
    probe = f"import sys; sys.path.insert(0, {FAKE!r}); {code}; print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True,
                          cwd=REPO)
    return set(done.stdout.split())


def test_the_base_install_never_imports_airflow() -> None:
    loaded = _modules_after("import sink.cli, certification.cli, sink.airflow, sink.airflow.locator, "
                            "sink.airflow.provider_info, sink.airflow.observation, sink.airflow.runtime_bridge")
    assert "airflow" not in loaded


def test_loading_the_trigger_and_operator_loads_no_runtime() -> None:
    loaded = _modules_after("import af_fake_airflow; af_fake_airflow.install(); "
                            "import sink.airflow.trigger, sink.airflow.operator")
    heavy = {"sink.runtime.service", "sink.runtime.supervisor", "sink.runtime.composition", "sink.preparation",
             "sink.compiler", "sink.airflow.observation", "sink.airflow.journal_async_pg", "psycopg", "httpx",
             "sink.transport.httpx_transport"}
    assert not heavy & loaded


def test_only_the_provider_and_its_harness_import_airflow() -> None:
    allowed = ("sink/airflow/", "certification/airflow/dags/", "scenarios/airflow/dags/")
    offenders = []
    for path in [*REPO.glob("sink/**/*.py"), *REPO.glob("certification/**/*.py"), *REPO.glob("mock_receiver/**/*.py"),
                 *REPO.glob("fault_proxy/**/*.py"), *REPO.glob("scenarios/**/*.py")]:
        relative = path.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(name == "airflow" or name.startswith("airflow.") for name in names) \
                    and not relative.startswith(allowed):
                offenders.append(relative)
    assert offenders == []
    importers = sorted({p.relative_to(REPO).as_posix() for p in REPO.glob("sink/**/*.py")
                        if "sink.airflow" in p.read_text(encoding="utf-8")
                        and not p.relative_to(REPO).as_posix().startswith("sink/airflow/")})
    assert importers == []  # nothing else in the sink imports the provider
