"""The mock receiver: a FastAPI REST receiver with vendor personalities (behaviour files), a
durable ground-truth ledger and an admin API. It imports nothing of ``sink``.

The names in ``__all__`` are the public surface (docs/api.md); every other module and name is
private by convention and may change. They are loaded on first use (PEP 562): ``import
mock_receiver`` does not import FastAPI.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

# public name -> (module, name in that module)
_EXPORTS: dict[str, tuple[str, str]] = {
    "Behaviour": ("mock_receiver.behaviour", "Behaviour"),
    "BehaviourError": ("mock_receiver.behaviour", "BehaviourError"),
    "load_behaviour_file": ("mock_receiver.behaviour", "load_behaviour_file"),
    "parse_behaviour": ("mock_receiver.behaviour", "parse_behaviour"),
    "Receiver": ("mock_receiver.intake", "Receiver"),
    "open_receiver": ("mock_receiver.app", "open_receiver"),
    "create_data_app": ("mock_receiver.app", "create_data_app"),
    "create_admin_app": ("mock_receiver.app", "create_admin_app"),
}

__all__ = [
    "Behaviour", "BehaviourError", "Receiver", "create_admin_app", "create_data_app", "load_behaviour_file",
    "open_receiver", "parse_behaviour",
]

if TYPE_CHECKING:
    from mock_receiver.app import create_admin_app, create_data_app, open_receiver
    from mock_receiver.behaviour import Behaviour, BehaviourError, load_behaviour_file, parse_behaviour
    from mock_receiver.intake import Receiver


def __getattr__(name: str) -> object:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'mock_receiver' has no attribute {name!r}") from None
    value = getattr(import_module(module), attribute)
    globals()[name] = value  # resolved once; later lookups never reach __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
