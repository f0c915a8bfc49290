"""Ctrl-C for every command: stop within about a second with `error: interrupted`, status 130.

Python raises KeyboardInterrupt in the main thread, but what reaches the command line is not
always a KeyboardInterrupt: DuckDB cancels its query and raises its own error, a thread pool
swallows it or waits for its running HTTP requests. So the handler installed here records
that SIGINT came (the CLI then reports whatever exception follows as an interrupt) and
starts a watchdog: a process still running GRACE_SECONDS later leaves at once with status
130, as does a second Ctrl-C. Leaving hard is safe for the database: DuckDB discards an
uncommitted transaction as it does after a crash, and the kernel drops the file locks.
"""

from __future__ import annotations

import os
import signal
import threading
import weakref

EXIT_STATUS = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
GRACE_SECONDS = 1.0
MESSAGE = b"error: interrupted\n"

_received = threading.Event()
_reported = threading.Lock()
_connections: "weakref.WeakSet" = weakref.WeakSet()  # open DuckDB connections, cancelled on Ctrl-C


def install():
    """Handle SIGINT from now on; returns the previous handler (None off the main thread,
    where Python cannot install one)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        return signal.signal(signal.SIGINT, _on_sigint)
    except (ValueError, OSError):
        return None


def restore(previous) -> None:
    """Put back the handler `install` replaced (for callers that run the CLI in-process)."""
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, previous)


def received() -> bool:
    """Whether SIGINT has come: any exception after it is the interrupt's doing."""
    return _received.is_set()


def report() -> None:
    """Print the one line, once, whoever gets there first (the CLI or the watchdog)."""
    if _reported.acquire(blocking=False):
        try:
            os.write(2, MESSAGE)
        except OSError:
            pass


def cancel_on_interrupt(con) -> None:
    """Have Ctrl-C cancel the statement `con` runs, in whichever thread it runs (DuckDB
    notices a signal only in the main thread, and only where it looks for one)."""
    _connections.add(con)


def _cancel_queries() -> None:
    for con in list(_connections):
        try:
            con.interrupt()
        except Exception:  # closed meanwhile: nothing to cancel
            pass


def _on_sigint(signum, frame):
    if _received.is_set():  # the second Ctrl-C: no more waiting
        _leave()
    _received.set()
    _cancel_queries()
    watchdog = threading.Timer(GRACE_SECONDS, _leave)
    watchdog.daemon = True
    watchdog.start()
    raise KeyboardInterrupt


def _leave() -> None:
    report()
    os._exit(EXIT_STATUS)
