"""The Airflow provider's tests that run without Airflow: a real mock receiver behind the fault
proxy (the acceptance's 30-minute-job receiver), a private deployment, and the provider's
runtime bridge and read-only observer driven directly (``tests/airflow/in_airflow/`` holds the
tests that need Airflow itself; ``certify airflow`` runs them inside an Airflow environment)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
from af_support import BEHAVIOUR, Stack

from certification.airflow.deployment import SENTINEL_TOKEN, make_deployment
from certification.services import proxy_process, receiver_process

if importlib.util.find_spec("airflow") is None:
    # Airflow lives only in its own virtual environments (`certify airflow` runs these there).
    collect_ignore = ["in_airflow"]


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    monkeypatch.setenv("MOCK_RECEIVER_TOKEN", SENTINEL_TOKEN)
    with receiver_process(BEHAVIOUR, tmp_path / "receiver") as receiver, \
            proxy_process(receiver.data_url, tmp_path / "proxy", 0) as proxy:
        yield Stack(receiver, proxy, make_deployment(tmp_path / "work", proxy_url=proxy.url))
