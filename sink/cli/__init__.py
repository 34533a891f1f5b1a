"""``delivery``: the reference sink's operator CLI (offline commands).

Exit codes follow ``ExitClass``: 0 ok, 2 invalid input (with stable codes), 3 unavailable.
``--format json`` writes exactly one stable, redacted JSON object to stdout; human diagnostics go
to stderr. Tracebacks are never shown: an unexpected internal failure prints its exception type
only (exit 1), because a traceback's locals could include document content.

The command modules import the sink itself inside their commands (see ``sink.cli.common``): the
registration below costs Typer and the option types only, not the whole sink.
"""

from __future__ import annotations

import itertools
import sys

# httpx's package imports its own command-line client (click, rich, pygments: about a sixth of this
# process's start-up, measured with -X importtime) only to offer `httpx` as a command, which no sink
# process calls. A None entry makes that one optional import fail the way httpx expects when its
# [cli] extra is not installed; every other part of httpx is untouched.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # the import system's "not importable"

import typer  # noqa: E402 - after the entry above

from sink.cli import (  # noqa: F401, E402 - registers the commands
    gc_command,
    operator_commands,
    plan_commands,
    preview,
    runtime_commands,
)
from sink.cli.common import INTERNAL_ERROR_EXIT, PLAN_VIEW_SCHEMA, app, emit_json  # noqa: E402
from sink.cli.plan_commands import plan_view  # noqa: E402

__all__ = ["PLAN_VIEW_SCHEMA", "app", "main", "plan_view"]


# Typer vendors click; its UsageError (bad option value, unknown option, missing argument) is
# reachable only as a base class of the public BadParameter.
_UsageError: type[Exception] = next(
    base for base in typer.BadParameter.__mro__ if base.__name__ == "UsageError"
)


def _wants_json(args: list[str]) -> bool:
    return "--format=json" in args or any(
        flag == "--format" and value == "json" for flag, value in itertools.pairwise(args)
    )


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        code = app(args=args, prog_name="delivery", standalone_mode=False)
    except _UsageError as exc:
        from sink.contracts.errors import ExitClass  # noqa: PLC0415 - start-up cost: only on a usage error

        exit_code = int(getattr(exc, "exit_code", ExitClass.INVALID_INPUT))
        if _wants_json(args):
            message = str(getattr(exc, "format_message", lambda: "invalid command line")())
            emit_json({"ok": False, "exit_code": exit_code,
                        "errors": [{"code": "cli.usage", "location": "command line", "message": message}]})
        show = getattr(exc, "show", None)
        if callable(show):
            show()  # click's own usage text on stderr
        sys.stderr.write("error[cli.usage] invalid command line\n")
        raise SystemExit(exit_code) from None
    except Exception as exc:  # the last line of defence against a leaking traceback
        sys.stderr.write(f"delivery: internal error ({type(exc).__name__})\n")
        raise SystemExit(INTERNAL_ERROR_EXIT) from None
    raise SystemExit(code if isinstance(code, int) else 0)
