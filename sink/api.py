"""The reference sink as a library: compile a plan, run or resume a delivery, inspect an operation.

Every entry point returns a typed result built from the journal (``sink.contracts.results``), never
a ``(dict, exit_class)`` pair; each result carries its ``exit_class``. The errors a caller catches are
listed with them. The names in ``__all__`` are the public surface (docs/api.md); every other module
of ``sink`` is private by convention. They are loaded on first use (PEP 562), so ``import sink.api``
imports neither the runtime nor a journal adapter until a name is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

# public name -> (module, name in that module)
_EXPORTS: dict[str, tuple[str, str]] = {
    # compiling: workload + profile + binding -> an immutable plan
    "compile_files": ("sink.compiler", "compile_files"),
    "default_paths": ("sink.compiler", "default_paths"),
    "CompiledPlan": ("sink.contracts.plan", "CompiledPlan"),
    # running: where durable state lives, how this worker runs, and the three entry points
    "Locations": ("sink.runtime.composition", "Locations"),
    "RunSettings": ("sink.runtime.composition", "RunSettings"),
    "JournalSpec": ("sink.runtime.composition", "JournalSpec"),
    "parse_journal": ("sink.runtime.composition", "parse_journal"),
    "run_delivery": ("sink.runtime.service", "run_delivery"),
    "resume_delivery": ("sink.runtime.service", "resume_delivery"),
    "inspect_operation": ("sink.runtime.service", "inspect_operation"),
    # typed results
    "DeliveryCompleted": ("sink.contracts.results", "DeliveryCompleted"),
    "DeliveryPending": ("sink.contracts.results", "DeliveryPending"),
    "DeliveryBlocked": ("sink.contracts.results", "DeliveryBlocked"),
    "ChildResult": ("sink.contracts.results", "ChildResult"),
    "ChildStatus": ("sink.contracts.results", "ChildStatus"),
    "OperatorAction": ("sink.contracts.results", "OperatorAction"),
    "DeliverySkipped": ("sink.runtime.service", "DeliverySkipped"),
    "InspectionResult": ("sink.runtime.service", "InspectionResult"),
    "ChildDetail": ("sink.runtime.service", "ChildDetail"),
    "ExitClass": ("sink.contracts.errors", "ExitClass"),
    "ErrorCode": ("sink.contracts.errors", "ErrorCode"),
    # errors a caller catches (each carries a stable code; none carries a secret or a payload row)
    "CompileError": ("sink.compiler", "CompileError"),
    "DeliveryError": ("sink.contracts.errors", "DeliveryError"),
    "SourceError": ("sink.contracts.source", "SourceError"),
    "SecurityRefusal": ("sink.security.errors", "SecurityRefusal"),
    "UnknownOperation": ("sink.runtime.service", "UnknownOperation"),
    "JournalError": ("sink.journal.port", "JournalError"),
    "JournalConfigurationError": ("sink.journal.port", "JournalConfigurationError"),
    "JournalRejection": ("sink.journal.port", "JournalRejection"),
    "JournalUnavailable": ("sink.journal.port", "JournalUnavailable"),
    "JournalSpecError": ("sink.runtime.composition", "JournalSpecError"),
    "StateSymlinkRefused": ("sink.runtime.composition", "StateSymlinkRefused"),
    "SentButNotRecorded": ("sink.runtime.submit_step", "SentButNotRecorded"),
    "CommitUnconfirmed": ("sink.runtime.submit_step", "CommitUnconfirmed"),
    "ArtifactError": ("sink.artifacts.port", "ArtifactError"),
}

__all__ = [
    "ArtifactError", "ChildDetail", "ChildResult", "ChildStatus", "CommitUnconfirmed", "CompileError",
    "CompiledPlan", "DeliveryBlocked", "DeliveryCompleted", "DeliveryError", "DeliveryPending",
    "DeliverySkipped", "ErrorCode", "ExitClass", "InspectionResult", "JournalConfigurationError",
    "JournalError", "JournalRejection", "JournalSpec", "JournalSpecError", "JournalUnavailable", "Locations",
    "OperatorAction", "RunSettings", "SecurityRefusal", "SentButNotRecorded", "SourceError",
    "StateSymlinkRefused", "UnknownOperation", "compile_files", "default_paths", "inspect_operation",
    "parse_journal", "resume_delivery", "run_delivery",
]

if TYPE_CHECKING:
    from sink.artifacts.port import ArtifactError
    from sink.compiler import CompileError, compile_files, default_paths
    from sink.contracts.errors import DeliveryError, ErrorCode, ExitClass
    from sink.contracts.plan import CompiledPlan
    from sink.contracts.results import (
        ChildResult,
        ChildStatus,
        DeliveryBlocked,
        DeliveryCompleted,
        DeliveryPending,
        OperatorAction,
    )
    from sink.contracts.source import SourceError
    from sink.journal.port import JournalConfigurationError, JournalError, JournalRejection, JournalUnavailable
    from sink.runtime.composition import (
        JournalSpec,
        JournalSpecError,
        Locations,
        RunSettings,
        StateSymlinkRefused,
        parse_journal,
    )
    from sink.runtime.service import (
        ChildDetail,
        DeliverySkipped,
        InspectionResult,
        UnknownOperation,
        inspect_operation,
        resume_delivery,
        run_delivery,
    )
    from sink.runtime.submit_step import CommitUnconfirmed, SentButNotRecorded
    from sink.security.errors import SecurityRefusal


def __getattr__(name: str) -> object:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'sink.api' has no attribute {name!r}") from None
    value = getattr(import_module(module), attribute)
    globals()[name] = value  # resolved once; later lookups never reach __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
