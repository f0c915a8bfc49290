"""Run one piece of work in a forked child process, so that the memory it used is gone when it ends.

The ingest's fetch decodes millions of JSON values a month; what that leaves in the heap
(arenas neither Python nor glibc can hand back while a few objects pin them) would
otherwise sit under DuckDB's write for the rest of the run (BENCHMARKS.md). In a child, it
all goes back to the system when the child exits.

The child's progress messages, and then its result or its exception (with the child's
traceback as its cause, for --debug), come back through a pipe, so the caller sees the
work as if it had run in-process. The child ignores Ctrl-C (the parent, which gets it too,
stops the child), dies with its parent (even one killed by SIGKILL) and holds none of the
parent's lock files (db.exclusive). Where fork is not available the work runs in-process.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import traceback
from typing import Callable, TypeVar

from .errors import YolocostError

T = TypeVar("T")
Progress = Callable[[str], None]
_PR_SET_PDEATHSIG = 1


class ChildTraceback(Exception):
    """The child's traceback, set as the cause of the exception it raised."""

    def __str__(self) -> str:
        return self.args[0]


def glibc():
    """glibc as a ctypes library, None on other C libraries (musl, macOS, Windows)."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        return ctypes.CDLL("libc.so.6")
    except (AttributeError, OSError, ValueError):  # no such name or library
        return None


def run(work: Callable[[Progress], T], progress: Progress, what: str) -> T:
    """`work(progress)` in a forked child; returns what it returns (pickled across) or raises
    what it raises. `what` names the work in the message of a child that dies without an
    answer (killed by the system for memory, say)."""
    if sys.platform != "linux":  # fork without exec is unsafe on macOS and missing on Windows
        return work(progress)
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(work, writer, os.getpid()), daemon=True)
    for stream in (sys.stdout, sys.stderr):  # or the child would write what is buffered again
        if stream is not None:
            stream.flush()
    try:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # until the child ignores it
        try:
            child.start()
        finally:  # a Ctrl-C that came meanwhile is raised here, and the child stopped below
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        writer.close()
        while True:
            try:
                kind, *payload = reader.recv()
            except EOFError:  # the child ended without an answer
                child.join()
                raise YolocostError(f"{what} ended {_how(child.exitcode)} before it finished; nothing was changed"
                                    ) from None
            if kind == "say":
                progress(payload[0])
            elif kind == "done":
                return payload[0]
            else:
                exc, text = payload
                exc.__cause__ = ChildTraceback(text)
                raise exc
    finally:
        reader.close()
        writer.close()
        if child.pid is not None:  # started
            if child.is_alive():  # the parent stops early: Ctrl-C, or an error while relaying
                child.kill()
            child.join()


def _child(work: Callable[[Progress], T], writer, parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    libc = glibc()
    if libc is not None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)
    sending = threading.Lock()  # the work may report from several threads

    def say(message: str) -> None:
        with sending:
            writer.send(("say", message))

    try:
        result = work(say)
        answer = ("done", result)
    except BaseException as exc:  # noqa: BLE001 - every error goes back to the parent
        answer = ("error", exc, traceback.format_exc())
    try:
        writer.send(answer)
    except BrokenPipeError:  # the parent is gone
        os._exit(1)
    except Exception as exc:  # an answer that cannot be pickled
        name = type(answer[1]).__name__
        writer.send(("error", RuntimeError(f"{name} could not be sent back from the child: {exc}"),
                     answer[2] if answer[0] == "error" else traceback.format_exc()))
    finally:
        writer.close()


def _how(exitcode: int | None) -> str:
    """How a child ended, for a message."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (the system may have run out of memory)" if -exitcode == signal.SIGKILL else ""
        return f"by {name}{hint}"
    return f"with status {exitcode}"
