"""The certification harness: sinks under test, scenario catalog, process orchestration, histories,
checkers, signed evidence, offline verification and the regression gate.

It imports ``sink`` only for contracts and the failpoint list: evidence is honest only when the
receiver's ground truth, the proxy's log and the checkers are computed by code that does not share
the sink's bugs (its hashing included).

The names in ``__all__`` are the public surface (docs/api.md); every other module and name is
private by convention and may change. They are loaded on first use (PEP 562), so ``import
certification`` stays cheap for the CLI and for every harness process that imports it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

PRODUCER = "restproof-certify"

# public name -> (module, name in that module)
_EXPORTS: dict[str, tuple[str, str]] = {
    # the real parts on free 127.0.0.1 ports, as context managers, and their typed clients
    # (a public name never equals a submodule's: importing that submodule would replace it)
    "start_receiver": ("certification.testing.parts", "receiver"),
    "start_fault_proxy": ("certification.testing.parts", "fault_proxy"),
    "start_tcp_proxy": ("certification.testing.parts", "tcp_proxy"),
    "bundled_personalities": ("certification.testing.parts", "bundled_personalities"),
    "Receiver": ("certification.services", "Receiver"),
    "Proxy": ("certification.services", "Proxy"),
    "TcpProxy": ("certification.testing.parts", "TcpProxy"),
    "ServiceUnavailable": ("certification.services", "ServiceUnavailable"),
    "RuleRefused": ("certification.services", "RuleRefused"),
    # sinks under test and catalog rows, judged as ``certify run`` judges them
    "SinkSpec": ("certification.sinks", "SinkSpec"),
    "SinkFileError": ("certification.sinks", "SinkFileError"),
    "load_sink": ("certification.sinks", "load_sink"),
    "Row": ("certification.scenarios", "Row"),
    "CatalogError": ("certification.scenarios", "CatalogError"),
    "load_catalog": ("certification.scenarios", "load_catalog"),
    "bundled_catalogs": ("certification.testing.rows", "bundled_catalogs"),
    "RowSession": ("certification.testing.rows", "RowSession"),
    "RowReport": ("certification.testing.rows", "RowReport"),
    # histories and the checkers that read them
    "History": ("certification.history", "History"),
    "CheckResult": ("certification.checkers", "CheckResult"),
    "Status": ("certification.checkers", "Status"),
    "check_all": ("certification.checkers", "check_all"),
    "compose": ("certification.checkers", "compose"),
    # signed evidence: offline verification and the regression gate
    "VerifiedEvidence": ("certification.verify", "VerifiedEvidence"),
    "VerificationFailed": ("certification.verify", "VerificationFailed"),
    "verify_artifact": ("certification.verify", "verify_artifact"),
    "GateResult": ("certification.gate", "GateResult"),
    "run_gate": ("certification.gate", "gate"),
}

__all__ = [
    "PRODUCER", "CatalogError", "CheckResult", "GateResult", "History", "Proxy", "Receiver", "Row",
    "RowReport", "RowSession", "RuleRefused", "ServiceUnavailable", "SinkFileError", "SinkSpec", "Status",
    "TcpProxy", "VerificationFailed", "VerifiedEvidence", "bundled_catalogs", "bundled_personalities",
    "check_all", "compose", "load_catalog", "load_sink", "run_gate", "start_fault_proxy", "start_receiver",
    "start_tcp_proxy", "verify_artifact",
]

if TYPE_CHECKING:
    from certification.checkers import CheckResult, Status, check_all, compose
    from certification.gate import GateResult
    from certification.gate import gate as run_gate
    from certification.history import History
    from certification.scenarios import CatalogError, Row, load_catalog
    from certification.services import Proxy, Receiver, RuleRefused, ServiceUnavailable
    from certification.sinks import SinkFileError, SinkSpec, load_sink
    from certification.testing.parts import TcpProxy, bundled_personalities
    from certification.testing.parts import fault_proxy as start_fault_proxy
    from certification.testing.parts import receiver as start_receiver
    from certification.testing.parts import tcp_proxy as start_tcp_proxy
    from certification.testing.rows import RowReport, RowSession, bundled_catalogs
    from certification.verify import VerificationFailed, VerifiedEvidence, verify_artifact


def __getattr__(name: str) -> object:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'certification' has no attribute {name!r}") from None
    value = getattr(import_module(module), attribute)
    globals()[name] = value  # resolved once; later lookups never reach __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
