"""The fault proxy: mitmproxy in reverse mode with HTTP-phase faults (close, truncate, delay,
status, hold, kill) armed through a control API, and a request log; ``fault_proxy.tcp`` is the
byte-level, Toxiproxy-compatible TCP proxy. It imports nothing of ``sink``.

The names in ``__all__`` are the public surface (docs/api.md); every other module and name is
private by convention and may change. They are loaded on first use (PEP 562): ``import
fault_proxy`` imports neither mitmproxy nor httpx.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

# public name -> (module, name in that module)
_EXPORTS: dict[str, tuple[str, str]] = {
    # a rule: what to match, when to fire, which phase of the exchange to cut
    "RuleSpec": ("fault_proxy.rules", "RuleSpec"),
    "Match": ("fault_proxy.rules", "Match"),
    "CloseFault": ("fault_proxy.rules", "CloseFault"),
    "TruncateFault": ("fault_proxy.rules", "TruncateFault"),
    "DelayFault": ("fault_proxy.rules", "DelayFault"),
    "StatusFault": ("fault_proxy.rules", "StatusFault"),
    "HoldFault": ("fault_proxy.rules", "HoldFault"),
    "KillFault": ("fault_proxy.rules", "KillFault"),
    # the control API's client
    "ControlClient": ("fault_proxy.control_client", "ControlClient"),
    "ControlError": ("fault_proxy.control_client", "ControlError"),
    # serving in-process (``fault-proxy serve`` is the same thing behind a CLI)
    "ServeConfig": ("fault_proxy.config", "ServeConfig"),
    "ConfigError": ("fault_proxy.config", "ConfigError"),
    "build_config": ("fault_proxy.config", "build_config"),
    "serve": ("fault_proxy.server", "serve"),
    "StartupError": ("fault_proxy.server", "StartupError"),
    # the TCP proxy: a real Toxiproxy when installed, else the built-in one
    "start_toxiproxy": ("fault_proxy.tcp.launcher", "start_toxiproxy"),
    "ToxiproxyHandle": ("fault_proxy.tcp.launcher", "ToxiproxyHandle"),
    "ToxiproxyNotFound": ("fault_proxy.tcp.launcher", "ToxiproxyNotFound"),
}

__all__ = [
    "CloseFault", "ConfigError", "ControlClient", "ControlError", "DelayFault", "HoldFault", "KillFault",
    "Match", "RuleSpec", "ServeConfig", "StartupError", "StatusFault", "ToxiproxyHandle", "ToxiproxyNotFound",
    "TruncateFault", "build_config", "serve", "start_toxiproxy",
]

if TYPE_CHECKING:
    from fault_proxy.config import ConfigError, ServeConfig, build_config
    from fault_proxy.control_client import ControlClient, ControlError
    from fault_proxy.rules import (
        CloseFault,
        DelayFault,
        HoldFault,
        KillFault,
        Match,
        RuleSpec,
        StatusFault,
        TruncateFault,
    )
    from fault_proxy.server import StartupError, serve
    from fault_proxy.tcp.launcher import ToxiproxyHandle, ToxiproxyNotFound, start_toxiproxy


def __getattr__(name: str) -> object:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'fault_proxy' has no attribute {name!r}") from None
    value = getattr(import_module(module), attribute)
    globals()[name] = value  # resolved once; later lookups never reach __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
