"""The one place where what a command raises becomes a line on stderr and an exit status.

A YolocostError (anything the user can fix) is `error: <one line>` and status 2; Ctrl-C is
`error: interrupted` and 130; a reader of stdout that left early is one line and 2; DuckDB's
out-of-memory is one line and 2; anything else is a bug: its type only, status 1, and the
traceback with --debug.
"""

from __future__ import annotations

import os
import sys

import click

from .. import interrupts
from ..errors import YolocostError
from .state import State
from .streams import hold_standard_descriptors, to_stderr


class Group(click.Group):
    """Maps library errors to one line and an exit status instead of a traceback."""

    def main(self, *args, **kwargs):
        """Ctrl-C anywhere, even before a command runs or after click has turned it into
        its own Abort, ends with `error: interrupted` and status 130."""
        hold_standard_descriptors()
        previous = interrupts.install()
        try:
            return super().main(*args, **kwargs)
        except SystemExit as exc:
            if interrupts.received() and exc.code != interrupts.EXIT_STATUS:
                interrupts.report()
                raise SystemExit(interrupts.EXIT_STATUS) from None
            raise
        finally:
            interrupts.restore(previous)

    def invoke(self, ctx: click.Context):
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # a closed pipe shows here, not at exit
            return result
        except YolocostError as exc:
            if interrupts.received():  # the error is the interrupt's doing (a cancelled query, ...)
                exit_interrupted(ctx)
            to_stderr(f"error: {exc}")
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            exit_interrupted(ctx)
        except BrokenPipeError:
            exit_closed_pipe(ctx)
        except Exception as exc:  # anything unforeseen: still one line, unless --debug
            if interrupts.received():  # DuckDB and thread pools turn Ctrl-C into other exceptions
                exit_interrupted(ctx)
            state = ctx.find_object(State)
            if state is not None and state.debug:
                raise
            memory = out_of_memory(exc)
            if memory:
                to_stderr(f"error: {memory}")
                ctx.exit(2)
            to_stderr(unexpected(exc))
            ctx.exit(1)


class OneLineCommand(click.Command):
    """A command whose usage errors (an unknown option, a missing value) are the one line
    and exit status 2 of any bad input, not click's usage text: a submission hook reads it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise YolocostError(f"{ctx.info_name}: {exc.format_message()}") from None


def out_of_memory(exc: BaseException) -> str | None:
    """DuckDB's out-of-memory as one line (None for anything else); yolocost.db, and DuckDB
    with it, is imported only for an error of DuckDB's own."""
    if not type(exc).__module__.lstrip("_").startswith("duckdb"):
        return None
    from ..db import out_of_memory as duckdb_out_of_memory

    return duckdb_out_of_memory(exc)


def unexpected(exc: BaseException) -> str:
    """The catch-all's line for a genuine bug: the exception's type only. Its text can carry
    anything (a header value, a line of a token file), so it is shown with --debug only."""
    return f"error: unexpected {type(exc).__name__} (a bug in yolocost; rerun with --debug for the details)"


def exit_interrupted(ctx: click.Context):
    """Ctrl-C: one line and the shell's status for SIGINT (128 + 2)."""
    interrupts.report()
    ctx.exit(interrupts.EXIT_STATUS)


def exit_closed_pipe(ctx: click.Context):
    """The reader of stdout went away (`yolocost query ... | head -1`): the output is not
    complete, which a cron job must be able to tell, so one line and status 2. As the Python
    docs' note on SIGPIPE advises, stdout then points at /dev/null so that the exit flush does
    not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (a test runner's)
        pass
    to_stderr("error: standard output was closed before all of the output was written "
              "(its reader, such as `head`, left early)")
    ctx.exit(YolocostError.exit_code)
