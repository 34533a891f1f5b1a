"""The TCP toxic's evidence: it fired when a connection carrying a mutation request went through it,
read from the wire tap, whose loop may see a dead sink's closes a moment after the process exited."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from certification import tcp_faults
from certification.faults import FaultContext
from certification.scenarios import Fault
from certification.tcp_faults import TcpToxicFault
from certification.wiretap import TappedConnection, WireTap


class _Tap:
    """The tap as the fault reads it: its recorded connections, and the wait for their clients."""

    until_clients_left = WireTap.until_clients_left

    def __init__(self, *connections: TappedConnection) -> None:
        self.recorded = list(connections)

    def connections(self) -> list[TappedConnection]:
        return list(self.recorded)


def _upload() -> TappedConnection:
    connection = TappedConnection(0, "127.0.0.1:40000")
    connection.framer.feed(b"POST /batches HTTP/1.1\r\nHost: r\r\nContent-Length: 2\r\n\r\n{}")
    assert connection.framer.requests
    return connection


def _fault(monkeypatch: pytest.MonkeyPatch, tap: _Tap, *, once: bool = True) -> tuple[TcpToxicFault, FaultContext]:
    monkeypatch.setattr(tcp_faults, "read_request", lambda raw, contract: SimpleNamespace(mutation=True))
    fault = TcpToxicFault(Fault(type="tcp_toxic", once=once, toxic={"type": "slicer", "stream": "downstream"}))
    fault.fired = False
    fault.removed = True  # nothing to remove from a proxy that does not exist here
    ctx = FaultContext(row=SimpleNamespace(contract=object()), proxy=None, receiver=None, seed=0,  # type: ignore[arg-type]
                       tap=tap)  # type: ignore[arg-type]
    return fault, ctx


def test_a_one_shot_toxic_counts_the_upload_whose_close_reaches_the_tap_after_the_sink_exited(
        monkeypatch: pytest.MonkeyPatch) -> None:
    upload = _upload()
    fault, ctx = _fault(monkeypatch, _Tap(upload))
    threading.Timer(0.3, lambda: setattr(upload, "client_left_at", time.time())).start()
    fault.before_first_reap(ctx)  # the sink has exited; its close is still on its way to the tap
    assert fault.fired
    assert fault.evidence(ctx, (), ()).fired is True


def test_a_one_shot_toxic_whose_upload_never_ended_did_not_fire(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(WireTap.until_clients_left, "__defaults__", (0.2,))
    fault, ctx = _fault(monkeypatch, _Tap(_upload()))
    fault.before_first_reap(ctx)
    assert not fault.fired
    assert "no connection of the first run carried a mutation request" in fault.evidence(ctx, (), ()).detail


def test_a_toxic_that_met_no_connection_did_not_fire(monkeypatch: pytest.MonkeyPatch) -> None:
    fault, ctx = _fault(monkeypatch, _Tap(), once=False)
    fault.before_first_reap(ctx)
    assert fault.evidence(ctx, (), ()).fired is False
