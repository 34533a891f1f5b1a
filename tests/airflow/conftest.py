"""The Airflow provider's tests run without Airflow (never installed in the project's environment):
a real mock receiver behind the fault proxy (the acceptance's 30-minute-job receiver), a private
deployment, the provider's runtime bridge and read-only observer driven directly, and the operator
and triggers over a stand-in for Airflow's base classes (af_fake_airflow). Real Airflow is
``certify airflow``'s job."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from af_support import BEHAVIOUR, Stack

from certification.airflow.deployment import SENTINEL_TOKEN, make_deployment
from certification.services import proxy_process, receiver_process


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    monkeypatch.setenv("MOCK_RECEIVER_TOKEN", SENTINEL_TOKEN)
    with receiver_process(BEHAVIOUR, tmp_path / "receiver") as receiver, \
            proxy_process(receiver.data_url, tmp_path / "proxy", 0) as proxy:
        yield Stack(receiver, proxy, make_deployment(tmp_path / "work", proxy_url=proxy.url))
