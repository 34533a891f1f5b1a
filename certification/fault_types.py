"""Every fault type of a catalog row, by its ``type``: one object per type (``certification.faults``)."""

from __future__ import annotations

from certification.faults import (
    ConnectTimeoutFault,
    FailpointFault,
    HoldKillReleaseFault,
    ProxyKillFault,
    ProxyRuleFault,
    RowFault,
)
from certification.journal_faults import JournalKillFault
from certification.receiver_faults import (
    ExternalCancelFault,
    ReceiverClockFault,
    ReceiverCrashFault,
    ReceiverRuleFault,
    RetentionLapseFault,
)
from certification.scenarios import Fault
from certification.tcp_faults import TcpToxicFault

FAULT_TYPES: dict[str, type[RowFault]] = {
    "none": RowFault, "proxy": ProxyRuleFault, "proxy_kill": ProxyKillFault,
    "hold_kill_release": HoldKillReleaseFault, "failpoint": FailpointFault,
    "receiver_rule": ReceiverRuleFault, "external_cancel": ExternalCancelFault,
    "receiver_clock": ReceiverClockFault, "connect_timeout": ConnectTimeoutFault,
    "receiver_crash": ReceiverCrashFault, "tcp_toxic": TcpToxicFault, "journal_kill": JournalKillFault,
    "retention_lapse": RetentionLapseFault,
}


def fault_of(spec: Fault) -> RowFault:
    return FAULT_TYPES[spec.type](spec)
