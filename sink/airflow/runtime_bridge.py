"""The provider's one seam to the delivery runtime (the only module here that imports it).

The operator calls ``submit_or_resume`` (first execution, a task retry, a cleared run) and
``resume`` (after the trigger fired); both go through the runtime's public entry points
(``run_delivery`` / ``resume_delivery`` with ``wait_for_async=False``: a pending async child is
returned, never polled on the worker) and answer with the seed's continuation result,
``DeliveryCompleted | DeliveryPending | DeliveryBlocked``, built from the runtime's typed result
(ids, axes, codes and counts; no payload, body or secret). Every failure the runtime
catalogues becomes a ``DeliveryBlocked`` with its stable code and exit class, as ``delivery``
reports it; only a defect escapes as an exception.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from sink.airflow.locator import JournalLocator

EXIT_OK, EXIT_INVALID, EXIT_UNAVAILABLE, EXIT_UNKNOWN, EXIT_TERMINAL = 0, 2, 3, 4, 5
_OWNER_UNSAFE = re.compile(r"[^A-Za-z0-9._:/@+=-]")


@dataclass(frozen=True, slots=True)
class DeliveryCompleted:
    parent_id: str
    operation_ids: tuple[str, ...]
    frontier_order: int | None


@dataclass(frozen=True, slots=True)
class DeliveryPending:
    parent_id: str
    operation_id: str
    """The async child being observed (``continuation_kind`` poll_receipt)."""
    continuation_kind: str = "poll_receipt"


@dataclass(frozen=True, slots=True)
class DeliveryBlocked:
    parent_id: str | None
    operation_id: str | None
    error_code: str | None
    exit_class: int

    @property
    def waits(self) -> bool:
        """Unavailable (3): nothing more was sent; the same call later may proceed (a held
        remote-job slot, a lease of a live worker, a journal that is down)."""
        return self.exit_class == EXIT_UNAVAILABLE


DeliveryResult = DeliveryCompleted | DeliveryPending | DeliveryBlocked


def worker_owner(*parts: object) -> str:
    """A lease owner id made of the task's identity (journal identifiers allow a closed set)."""
    text = ":".join(str(part) for part in parts if part is not None)
    cleaned = _OWNER_UNSAFE.sub("_", text).lstrip("._:/@+=-")
    return (cleaned or "airflow")[:200]


def result_of(result: Any) -> DeliveryResult:
    """The continuation result of the runtime's typed result (``sink.contracts.results``), or of
    ``DeliverySkipped`` (an empty interval: nothing admitted, nothing to wait for)."""
    outcome = getattr(result, "outcome", None)
    if outcome is None:  # DeliverySkipped
        return DeliveryCompleted("", (), None)
    parent_id = str(result.parent_id)
    if outcome == "completed":
        return DeliveryCompleted(parent_id, tuple(str(child.operation_id) for child in result.children),
                                 result.frontier_order)
    if outcome == "pending":
        if result.continuation_kind == "poll_receipt":
            return DeliveryPending(parent_id, str(result.operation_id))
        # Admitted children not sent yet (a slot or a lease was busy): the same call later goes on.
        return DeliveryBlocked(parent_id, str(result.operation_id), None, EXIT_UNAVAILABLE)
    code = None if result.error_code is None else str(result.error_code.value)
    return DeliveryBlocked(parent_id, str(result.operation_id), code, int(result.exit_class))


def _guarded(action: Callable[[], Any]) -> DeliveryResult:
    """Map every catalogued failure to its code and exit class, as the ``delivery`` CLI does."""
    from sink.artifacts.port import ArtifactError  # noqa: PLC0415
    from sink.compiler.diagnostics import CompileError  # noqa: PLC0415
    from sink.contracts.errors import DeliveryError  # noqa: PLC0415
    from sink.journal.port import (  # noqa: PLC0415
        JournalConfigurationError,
        JournalError,
        JournalRejection,
        JournalUnavailable,
    )
    from sink.runtime.service import UnknownOperation  # noqa: PLC0415
    from sink.security.errors import SecurityRefusal  # noqa: PLC0415
    from sink.source.errors import SourceError  # noqa: PLC0415

    try:
        result = action()
    except CompileError as exc:
        return DeliveryBlocked(None, None, exc.diagnostics[0].code, EXIT_INVALID)
    except DeliveryError as exc:
        return DeliveryBlocked(None, None, exc.code.value, int(exc.spec.exit_class))
    except (SourceError, JournalConfigurationError) as exc:
        return DeliveryBlocked(None, None, str(getattr(exc, "code", "delivery.invalid_input")), EXIT_INVALID)
    except SecurityRefusal as exc:
        return DeliveryBlocked(None, None, exc.code, int(exc.exit_class))
    except UnknownOperation:
        return DeliveryBlocked(None, None, "delivery.unknown_operation", EXIT_INVALID)
    except JournalUnavailable as exc:
        return DeliveryBlocked(None, None, exc.code.value, EXIT_UNAVAILABLE)
    except JournalRejection as exc:
        return DeliveryBlocked(None, None, f"journal.{exc.reason.value}", EXIT_UNKNOWN)
    except (JournalError, ArtifactError, OSError):
        return DeliveryBlocked(None, None, "delivery.unavailable", EXIT_UNAVAILABLE)
    return result_of(result)


def _locations(locator: JournalLocator) -> Any:
    from sink.runtime.composition import Locations, parse_journal  # noqa: PLC0415

    return Locations(parse_journal(locator.journal), Path(locator.artifacts), Path(locator.markers),
                     pg_schema=locator.pg_schema)


def _settings(worker_id: str, lease_ttl: timedelta) -> Any:
    from sink.runtime.service import RunSettings  # noqa: PLC0415

    return RunSettings(worker_id=worker_id, wait_for_async=False, lease_ttl=lease_ttl)


def submit_or_resume(workload: Path, scope_from: date, scope_to: date, *, locator: JournalLocator, worker_id: str,
                     correction_revision: int = 0, lease_ttl: timedelta = timedelta(seconds=30)) -> DeliveryResult:
    """Compile the workload and deliver the interval: a new parent is frozen, sealed, admitted and
    submitted; the same interval again (a task retry, a cleared run) resumes the admitted parent
    from the journal without re-planning and without re-sending an effect not proven absent."""
    from sink.compiler import compile_files, default_paths  # noqa: PLC0415
    from sink.runtime.service import run_delivery  # noqa: PLC0415

    def action() -> Any:
        plan = compile_files(default_paths(workload))
        return run_delivery(plan, scope_from, scope_to, workload_dir=workload.resolve().parent,
                            locations=_locations(locator), settings=_settings(worker_id, lease_ttl),
                            correction_revision=correction_revision)

    return _guarded(action)


def resume(operation_id: str, *, locator: JournalLocator, worker_id: str,
           lease_ttl: timedelta = timedelta(seconds=30)) -> DeliveryResult:
    """Continue an admitted parent (or the parent of a child) from the journal alone."""
    from sink.runtime.service import resume_delivery  # noqa: PLC0415

    return _guarded(lambda: resume_delivery(operation_id, locations=_locations(locator),
                                            settings=_settings(worker_id, lease_ttl)))
