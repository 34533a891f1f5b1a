"""Module-scoped real receiver and fault proxy for the transport tests.

Imported by the test modules that use them rather than living in a conftest.py: the journal
tests import their own ``conftest`` by module name in spawned processes, and a second
``conftest`` earlier on ``sys.path`` would shadow it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tr_support import FaultProxy, ServerProcess, start_receiver


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
