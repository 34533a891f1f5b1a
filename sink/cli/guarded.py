"""One mapping from every catalogued failure to its stable code and exit class, for the commands
that reach the journal or the receiver: one line on stderr (and one JSON object with ``--format
json``), never a traceback, never exit 1 for a known failure.

A journal that went away says what is known: before anything was sent, nothing was sent; after a
mutation request was sent, that it may have reached the receiver and resolves when the journal
returns (``SentButNotRecorded``), never "nothing was sent".

The exception classes are imported when ``guarded`` runs, not with the module: by then the command
has imported the sink anyway, and ``delivery --help`` need not (start-up cost: see sink.cli.common).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, NoReturn, TypeVar

import typer

from sink.cli.common import OutputFormat, fail

if TYPE_CHECKING:
    from sink.compiler.diagnostics import CompileError
    from sink.contracts.errors import ExitClass
    from sink.journal.port import RejectionReason

T = TypeVar("T")


@cache
def refused_operator_input() -> frozenset[RejectionReason]:
    """An operator's command the journal's state does not permit: exit 2 (the command was wrong), not 4."""
    from sink.journal.port import RejectionReason  # noqa: PLC0415 - start-up cost (see the module's doc)

    return frozenset({
        RejectionReason.DECISION_NOT_PERMITTED, RejectionReason.MARKER_NOT_ORPHAN, RejectionReason.MARKER_MISMATCH,
        RejectionReason.EPOCH_NOT_INCREASING, RejectionReason.INVALID_REQUEST, RejectionReason.OPERATOR_REQUIRED,
    })

JOURNAL_UNAVAILABLE = ("journal unavailable: every request this run sent is recorded; run again when the journal "
                       "is back")


def refuse(code: str, message: str, exit_class: ExitClass, output: OutputFormat) -> NoReturn:
    sys.stderr.write(f"error[{code}] {message}\n")
    if output is OutputFormat.JSON:
        sys.stdout.write(json.dumps({"ok": False, "exit_code": int(exit_class),
                                     "errors": [{"code": code, "message": message}]}, sort_keys=True) + "\n")
    raise typer.Exit(int(exit_class))


def _compile_error() -> tuple[type[CompileError], ...]:
    """The compiler's error class, or nothing to match when the process never imported the compiler
    (then no CompileError can be in flight). An except clause evaluates its class only when an
    exception reaches it, so a ``resume`` neither imports the compiler to catch an error it cannot
    raise nor on a failure path (start-up cost: the compiler package is about 20 ms of imports)."""
    module = sys.modules.get("sink.compiler.diagnostics")
    if module is None:
        return ()
    error: type[CompileError] = module.CompileError
    return (error,)


def _invalid_input() -> tuple[type[Exception], ...]:
    """The operator's invalid input; ``ReconcileRefused`` (only ``delivery reconcile`` imports its
    module) only when imported, as in ``_compile_error``."""
    from sink.journal.port import JournalConfigurationError  # noqa: PLC0415 - imported by guarded already
    from sink.runtime.failpoints import FailpointConfigError  # noqa: PLC0415

    module = sys.modules.get("sink.runtime.reconcile")
    refused: tuple[type[Exception], ...] = () if module is None else (module.ReconcileRefused,)
    return (FailpointConfigError, JournalConfigurationError, *refused)


def guarded(output: OutputFormat, action: Callable[[], T]) -> T:
    """Run ``action``; map every catalogued failure to its exit class with one line."""
    # Imported here, not at the top: start-up cost (see the module's doc).
    from sink.artifacts.port import ArtifactError  # noqa: PLC0415
    from sink.contracts.errors import DeliveryError, ExitClass  # noqa: PLC0415
    from sink.journal.port import JournalError, JournalRejection, JournalUnavailable  # noqa: PLC0415
    from sink.runtime.service import UnknownOperation  # noqa: PLC0415
    from sink.runtime.submit_step import CommitUnconfirmed, SentButNotRecorded  # noqa: PLC0415
    from sink.security.errors import SecurityRefusal  # noqa: PLC0415
    from sink.source.errors import SourceError  # noqa: PLC0415

    try:
        return action()
    except _compile_error() as exc:
        fail(exc.diagnostics, output)
    except DeliveryError as exc:
        refuse(exc.code.value, exc.detail, exc.spec.exit_class, output)
    except SourceError as exc:
        refuse(exc.code, exc.message, exc.exit_class, output)
    except _invalid_input() as exc:
        refuse(getattr(exc, "code", "delivery.invalid_input"), str(exc), ExitClass.INVALID_INPUT, output)
    except SecurityRefusal as exc:
        refuse(exc.code, exc.detail, exc.exit_class, output)
    except UnknownOperation as exc:
        refuse("delivery.unknown_operation", str(exc), ExitClass.INVALID_INPUT, output)
    except (SentButNotRecorded, CommitUnconfirmed) as exc:
        refuse("journal.unavailable.after_send" if isinstance(exc, SentButNotRecorded) else exc.code.value,
               str(exc).partition(": ")[2] or str(exc), ExitClass.UNAVAILABLE, output)
    except JournalUnavailable as exc:
        refuse(exc.code.value, JOURNAL_UNAVAILABLE, ExitClass.UNAVAILABLE, output)
    except JournalRejection as exc:
        refused = exc.reason in refused_operator_input()
        exit_class = ExitClass.INVALID_INPUT if refused else ExitClass.EFFECT_UNKNOWN_OR_MANUAL
        refuse(f"journal.{exc.reason.value}", exc.detail, exit_class, output)
    except (JournalError, ArtifactError, OSError) as exc:
        refuse(getattr(exc, "code", "delivery.unavailable"), type(exc).__name__, ExitClass.UNAVAILABLE, output)
