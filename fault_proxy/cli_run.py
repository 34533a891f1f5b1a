"""Run a typer app with the project's exit-code contract and one-line errors.

Exit status: 0 success (and after SIGINT/SIGTERM), 2 invalid arguments, 3 an address cannot be
bound (unavailable). click's own usage errors are printed by typer as a multi-line panel; here
they become one line, ``<prog>: error: <message>``, like every other error of the command.
"""

from __future__ import annotations

import sys

import typer

EXIT_OK = 0
EXIT_INVALID = 2
EXIT_UNAVAILABLE = 3


def fail(prog: str, message: str, code: int) -> typer.Exit:
    """Print one error line on stderr and return the ``typer.Exit`` to raise."""
    typer.echo(f"{prog}: error: {message}", err=True)
    return typer.Exit(code)


def run(app: typer.Typer, prog: str) -> int:
    try:
        result = app(prog_name=prog, standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:  # Ctrl-C during startup: an operator's stop, not an error
        return EXIT_OK
    except typer.TyperException as exc:  # click's usage errors (typer vendors click)
        format_message = getattr(exc, "format_message", None)
        message = format_message() if callable(format_message) else str(exc)
        typer.echo(f"{prog}: error: {' '.join(str(message).split())}", err=True)
        code = getattr(exc, "exit_code", EXIT_INVALID)
        return code if isinstance(code, int) else EXIT_INVALID
    return result if isinstance(result, int) else EXIT_OK


def main_for(app: typer.Typer, prog: str) -> None:
    sys.exit(run(app, prog))
