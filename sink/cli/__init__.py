"""``delivery``: the reference sink's operator CLI (offline commands).

Exit codes follow ``ExitClass``: 0 ok, 2 invalid input (with stable codes), 3 unavailable.
``--format json`` writes exactly one stable, redacted JSON object to stdout; human diagnostics go
to stderr. Tracebacks are never shown: an unexpected internal failure prints its exception type
only (exit 1), because a traceback's locals could include document content.

The command modules import the sink itself inside their commands (see ``sink.cli.common``): their
registration costs Typer and the option types only, not the whole sink; and a process loads only
the command modules it needs (``COMMAND_GROUPS``).
"""

from __future__ import annotations

import importlib
import itertools
import sys
from typing import TYPE_CHECKING, Any

# httpx's package imports its own command-line client (click, rich, pygments: about a sixth of this
# process's start-up, measured with -X importtime) only to offer `httpx` as a command, which no sink
# process calls. A None entry makes that one optional import fail the way httpx expects when its
# [cli] extra is not installed; every other part of httpx is untouched.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # the import system's "not importable"

import typer  # noqa: E402 - after the entry above

from sink.cli import common  # noqa: E402
from sink.cli.common import INTERNAL_ERROR_EXIT, PLAN_VIEW_SCHEMA, emit_json  # noqa: E402

if TYPE_CHECKING:  # resolved on first use by __getattr__ below
    from sink.cli.common import app
    from sink.cli.plan_commands import plan_view

__all__ = ["PLAN_VIEW_SCHEMA", "app", "main", "plan_view", "script"]

COMMAND_MODULES = ("gc_command", "operator_commands", "plan_commands", "preview", "runtime_commands")
"""Every module that registers commands on ``sink.cli.common.app``."""
COMMAND_GROUPS = {
    **dict.fromkeys(("run", "resume", "inspect", "bundle"), "runtime_commands"),
    **dict.fromkeys(("reconcile", "abandon", "transfer-capacity", "retire-marker", "attest-epoch"),
                    "operator_commands"),
    **dict.fromkeys(("check", "plan", "schema", "check-design-contract"), "plan_commands"),
}
"""Command name -> the one module that registers it, for modules registering several commands.
A process that names one of these loads and builds only that module's commands: Typer turns every
registered command into a click command before it parses (about 20 ms of each process's start-up
for the fifteen, with the imports of the other modules). A module registering a single command is
left out: Typer would make a lone command the whole program (no subcommand name). Anything else
(``--help``, an unknown or single-module command) gets the full command tree, as before.
tests/compiler/test_cp_cli_startup.py holds this table against the registered commands."""


def _registered(modules: tuple[str, ...]) -> typer.Typer:
    for module in modules:
        importlib.import_module(f"sink.cli.{module}")
    return common.app


def __getattr__(name: str) -> Any:
    # ``from sink.cli import app`` (tests, tools) still gets every command.
    if name == "app":
        return _registered(COMMAND_MODULES)
    if name == "plan_view":
        return importlib.import_module("sink.cli.plan_commands").plan_view
    raise AttributeError(f"module 'sink.cli' has no attribute {name!r}")


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
    # httpcore imports the h2 package (HTTP/2, about 10 ms of start-up) whenever it is installed,
    # though it falls back cleanly without it; the transport speaks HTTP/1.1 only and never offers
    # h2 in ALPN (docs/transport.md). Set here, not at import, so that only a `delivery` process is
    # affected, never a program that imports the CLI module beside its own HTTP/2 client.
    sys.modules.setdefault("h2", None)  # type: ignore[arg-type]  # the import system's "not importable"
    args = sys.argv[1:] if argv is None else list(argv)
    group = COMMAND_GROUPS.get(args[0]) if args else None
    application = _registered(COMMAND_MODULES if group is None else (group,))
    try:
        code = application(args=args, prog_name="delivery", standalone_mode=False)
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


def script() -> None:
    """The ``delivery`` console script and ``python -m sink.cli``: ``main`` with the process's own
    arguments, then the process ends without the interpreter's teardown (``sink.cli.process``)."""
    from sink.cli.process import run_and_end  # noqa: PLC0415 - a process entry only

    run_and_end(main)
