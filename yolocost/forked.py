"""Run one piece of work in a forked child process, so that the memory it used is gone when it ends.

The ingest's fetch decodes millions of JSON values a month; what that leaves in the heap
(arenas neither Python nor glibc can hand back while a few objects pin them) would
otherwise sit under DuckDB's write for the rest of the run (BENCHMARKS.md). In a child, it
all goes back to the system when the child exits.

The child's progress messages, and then its result or its exception (type and message,
with the child's traceback as its cause, for --debug), come back through a pipe. An
exception that cannot cross is replaced by one of the nearest kind that says so: a
YolocostError stays one. The child ignores Ctrl-C (the parent, which gets it too, stops the
child), dies with its parent on Linux (even one killed by SIGKILL: PR_SET_PDEATHSIG) and
holds none of the parent's lock files (db.exclusive). Off Linux the work runs in-process.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
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


def run(work: Callable[[Progress], T], progress: Progress, what: str) -> T:
    """`work(progress)` in a forked child; returns what it returns (pickled across) or raises
    what it raises. `what` names the work in the message of a child that dies without an
    answer (killed by the system for memory, say)."""
    if sys.platform != "linux":  # fork without exec is unsafe on macOS and missing on Windows
        return work(progress)
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(work, reader, writer, os.getpid()), daemon=True)
    for stream in (sys.stdout, sys.stderr):  # or the child would write what is buffered again
        if stream is not None:
            stream.flush()
    answered = False
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
            except (EOFError, OSError):  # the child ended without an answer, or in the middle of one
                child.join()
                raise YolocostError(f"{what} ended {_how(child.exitcode)} before it finished; nothing was changed"
                                    ) from None
            if kind == "say":
                progress(payload[0])
                continue
            answered = True
            if kind == "done":
                return payload[0]
            exc, text = payload
            exc.__cause__ = ChildTraceback(text)
            raise exc
    finally:
        reader.close()
        writer.close()
        if child.pid is not None:  # started
            if answered:  # it is leaving on its own
                child.join(timeout=10)
            if child.is_alive():  # the parent stops early (Ctrl-C, an error while relaying), or it hangs
                child.kill()
            child.join()


def _child(work: Callable[[Progress], T], reader, writer, parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    reader.close()  # so that a send to a parent that is gone fails instead of filling the pipe
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)
    sending = threading.Lock()  # the work may report from several threads

    def send(message: tuple) -> None:
        with sending:
            writer.send(message)

    try:
        answer: tuple = ("done", work(lambda line: send(("say", line))))
    except BaseException as exc:  # noqa: BLE001 - every error goes back to the parent
        answer = ("error", _crossing(exc), traceback.format_exc())
    try:
        send(answer)
    except BrokenPipeError:  # the parent is gone
        os._exit(1)
    except Exception as exc:  # a result that cannot be pickled
        try:
            send(("error", RuntimeError(f"{type(answer[1]).__name__} could not be sent back from the child: {exc}"),
                  traceback.format_exc()))
        except Exception:  # the parent is gone: nothing to tell
            os._exit(1)
    finally:
        writer.close()


def _crossing(exc: BaseException) -> BaseException:
    """`exc` if the parent can rebuild it from its pickle, else one of the nearest kind that
    says what it was (a YolocostError stays one, so the CLI still prints one line)."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        kind = YolocostError if isinstance(exc, YolocostError) else RuntimeError
        return kind(str(exc) if kind is YolocostError else f"{type(exc).__name__}: {exc}")


def _die_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent ends (Linux's PR_SET_PDEATHSIG),
    from the C library whichever it is (glibc, musl)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (AttributeError, OSError):  # no prctl: the pipe's end tells the child when it sends
        pass


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
