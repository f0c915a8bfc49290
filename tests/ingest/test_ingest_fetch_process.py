"""The ingest's fetch runs in a child process (forked.py): the real `yolocost ingest`, its
child caught mid-request on a server that accepts connections and never answers. Killed,
the child makes a one-line error and leaves the database as it was; the parent killed or
interrupted takes the child with it, and the lock goes at once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _gone(pid: int) -> bool:
    """Ended: no such process, or a zombie nobody reaps (it holds nothing any more)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture
def stuck(yc):
    """A config whose server never answers: the fetch waits on its first request."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshakes; nobody ever reads or answers
        yield yc.config(f"http://127.0.0.1:{silent.getsockname()[1]}", prometheus="timeout_seconds = 120")


def _start(yc, config: Path, db: Path) -> tuple[subprocess.Popen, int]:
    """The ingest in its own process group (as a shell runs a command), and its fetch child."""
    # Popen, not the cli fixture: the test kills the fetch child of the running ingest
    proc = subprocess.Popen(yc.args(config, db), cwd=yc.folder, env=yc._env(None), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    h.wait_for(lambda: _children(proc.pid) or proc.poll() is not None, what="the fetch process")
    assert proc.poll() is None, proc.communicate()[1]
    (child,) = _children(proc.pid)
    return proc, child


def test_a_fetch_process_killed_by_the_system_is_one_line_and_changes_nothing(yc, stuck, prior_db):
    with h.unchanged(prior_db):
        proc, child = _start(yc, stuck, prior_db)
        try:
            os.kill(child, signal.SIGKILL)  # as the out-of-memory killer would
            out, err = proc.communicate(timeout=60)
        finally:
            h.kill_and_reap(proc)
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    h.assert_one_line_error(result, "the ingest's fetch process ended by SIGKILL (the system may have run out of "
                            "memory) before it finished; nothing was changed")
    assert not list(prior_db.parent.glob(f".{prior_db.name}.ingest-*"))  # its scratch folder went


def test_the_fetch_process_dies_with_a_killed_ingest_and_the_lock_goes_at_once(yc, stuck, prior_db, prom):
    proc, child = _start(yc, stuck, prior_db)
    h.kill_and_reap(proc)  # SIGKILL: the parent runs no code of its own after it
    h.wait_for(lambda: _gone(child), timeout=10, what="the fetch process to end with its parent")
    h.assert_ok(yc.ingest(yc.config(prom.url), prior_db))


def test_ctrl_c_stops_the_fetch_process_too(yc, stuck, prior_db):
    """SIGINT to the whole process group, as a terminal sends it: one `error: interrupted`
    (the child says nothing), status 130, and no process left behind."""
    with h.unchanged(prior_db):
        proc, child = _start(yc, stuck, prior_db)
        try:
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            h.kill_and_reap(proc)
    assert proc.returncode == 130, err
    assert err.count("error:") == 1 and err.strip().splitlines()[-1] == "error: interrupted", err
    assert "Traceback" not in err
    h.wait_for(lambda: _gone(child), timeout=10, what="the fetch process to end")
