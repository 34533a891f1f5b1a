"""Module-scoped real receiver and fault proxy for the transport tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mock_receiver"))

from mr_support import ServerProcess
from tr_support import FaultProxy, start_receiver


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_receiver(tmp_path_factory.mktemp("receiver"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def proxy(receiver: ServerProcess) -> Iterator[FaultProxy]:
    running = FaultProxy(receiver.data_url)
    yield running
    running.stop()


@pytest.fixture
def fresh_proxy(proxy: FaultProxy) -> FaultProxy:
    proxy.control.reset(seed=0)
    return proxy
