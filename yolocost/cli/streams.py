"""Where a command's lines go, and what happens when a stream cannot take them.

Logs and progress go to stderr, results to files or stdout. Messages never decide the exit
status: a stderr that cannot be written (a full log disk, a reader gone, a closed descriptor)
loses them and the run goes on, as does a stdout that carries only the closing lines of a
command whose work is files.
"""

from __future__ import annotations

import os
import sys

import click


def to_stderr(line: str) -> None:
    """Write a message line to stderr. A stderr that cannot take it (a full disk, a reader
    gone, a closed descriptor) loses the line, never the run: the exit status says whether
    the work was done, and a message about the lost message would have nowhere to go."""
    try:
        click.echo(line, err=True)
    except (OSError, ValueError):  # ValueError: a closed file object
        discard(sys.stderr)


def summary(text: str) -> None:
    """The closing lines of a command whose work is its files (report, export finance,
    monthly, demo): a stdout that cannot take them loses them, as stderr loses progress, and the
    status says the files were written. A command whose result is stdout (query) ends with
    status 2 instead (errors.exit_closed_pipe)."""
    try:
        click.echo(text)
    except (OSError, ValueError):
        discard(sys.stdout)


def write_stdout(text: str, chunk: int = 1 << 16) -> None:
    """Write a long result in pieces: a reader that leaves early (`| head -1`) then shows as
    a BrokenPipeError (one big write can lose it and end as if all was read)."""
    for i in range(0, len(text), chunk):
        sys.stdout.write(text[i:i + chunk])
    sys.stdout.flush()


def discard(stream) -> None:
    """Point the stream's descriptor at /dev/null, so that later writes and the flush at exit
    (which would fail again, and make Python exit 120) succeed; what it still buffers goes
    there too. A stream without a descriptor (a test runner's) is left as it is."""
    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (AttributeError, OSError, ValueError):
        return
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)


def hold_standard_descriptors() -> None:
    """A standard descriptor closed at start (`2>&-`) gets /dev/null: otherwise the next file
    opened (the database, a report) would take its number, and a line meant for stderr could
    land in that file."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                opened = os.open(os.devnull, os.O_RDWR)
            except OSError:
                return
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
