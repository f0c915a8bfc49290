"""`forked.run`: work done in a real forked child comes back as if done in-process (its
result, its progress in order, its exceptions with their type and message), a child that
dies says how, and the child holds none of the parent's locks."""

from __future__ import annotations

import multiprocessing.connection
import os
import signal
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from yolocost import db, forked
from yolocost.ingest.decoding import Points
from yolocost.errors import DataError, YolocostError


def test_the_result_and_the_progress_come_back_in_order_from_several_threads():
    def work(say):
        assert os.getpid() != parent  # it really runs elsewhere
        said = threading.Barrier(4)

        def thread(n):
            said.wait()
            for i in range(200):
                say(f"{n}:{i}")

        threads = [threading.Thread(target=thread, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return {"pid": os.getpid(), "values": np.arange(1_000_000, dtype=np.int64)}

    parent = os.getpid()
    heard: list[str] = []
    result = forked.run(work, heard.append, "the test's child")
    assert result["pid"] != parent
    assert int(result["values"].sum()) == 999_999 * 1_000_000 // 2
    assert len(heard) == 800  # none lost, none torn apart by another thread's
    for n in range(4):  # each thread's messages in the order it said them
        assert [m for m in heard if m.startswith(f"{n}:")] == [f"{n}:{i}" for i in range(200)]


def test_an_error_comes_back_with_its_type_message_and_the_childs_traceback():
    def work(say):
        say("before the error")
        raise DataError("the  answer\nwas wrong")

    heard: list[str] = []
    with pytest.raises(DataError) as caught:
        forked.run(work, heard.append, "the test's child")
    assert str(caught.value) == "the answer was wrong"
    assert heard == ["before the error"]
    assert isinstance(caught.value.__cause__, forked.ChildTraceback)
    assert 'raise DataError("the  answer' in str(caught.value.__cause__)  # the child's own line


def test_a_bug_keeps_its_type():
    with pytest.raises(ZeroDivisionError):
        forked.run(lambda say: 1 / 0, print, "the test's child")


def test_an_answer_that_cannot_be_sent_back_is_an_error_that_says_so():
    with pytest.raises(RuntimeError, match="could not be sent back from the child"):
        forked.run(lambda say: threading.Lock(), print, "the test's child")


def test_a_child_killed_by_the_system_is_a_one_line_error():
    """SIGKILL from within, as the kernel's out-of-memory killer would send it: the real signal."""
    def work(say):
        say("started")
        os.kill(os.getpid(), signal.SIGKILL)

    heard: list[str] = []
    with pytest.raises(YolocostError) as caught:
        forked.run(work, heard.append, "the test's child")
    assert str(caught.value) == ("the test's child ended by SIGKILL (the system may have run out of memory) "
                                 "before it finished; nothing was changed")
    assert heard == ["started"]


def test_a_child_killed_in_the_middle_of_its_answer_is_the_same_one_line_error():
    """The out-of-memory killer picks the child at its peak, which can be while it sends a big
    result. A real SIGKILL, timed by the child's own send (no real pipe can be made to stop
    halfway on cue): 4 KiB of the message go out, then the signal."""
    def work(say):
        real = multiprocessing.connection.Connection._send

        def send(self, buf, write=os.write):
            if len(buf) > 100_000:  # the result's body
                write(self._handle, memoryview(buf)[:4096])
                os.kill(os.getpid(), signal.SIGKILL)
            return real(self, buf)

        multiprocessing.connection.Connection._send = send  # in the child only
        return b"x" * 1_000_000

    with pytest.raises(YolocostError, match=r"^the test's child ended by SIGKILL .* before it finished; "):
        forked.run(work, print, "the test's child")


class _TwoArguments(DataError):
    def __init__(self, what, why):
        super().__init__(f"{what}: {why}")


class _TwoArgumentsBug(Exception):
    def __init__(self, what, why):
        super().__init__(f"{what}: {why}")


def test_an_error_the_parent_cannot_rebuild_keeps_its_kind_and_message():
    """Pickled as (type, args), these cannot be rebuilt from their one message: a YolocostError
    comes back as one (still one line and exit 2), anything else as a RuntimeError naming it."""
    def failing(exc):
        def work(say):
            raise exc
        return work

    with pytest.raises(YolocostError) as caught:
        forked.run(failing(_TwoArguments("the server", "a bad answer")), print, "the test's child")
    assert str(caught.value) == "the server: a bad answer"
    assert "_TwoArguments" in str(caught.value.__cause__)  # the child's traceback names it
    with pytest.raises(RuntimeError, match=r"^_TwoArgumentsBug: x: y$"):
        forked.run(failing(_TwoArgumentsBug("x", "y")), print, "the test's child")


def test_series_are_numbered_once_when_threads_convert_a_chunks_answers_together():
    """The worker threads number a chunk's series as their answers come (`Points.sids`): a
    series in several answers gets one id however the threads interleave. Threads switched
    as often as Python allows, over rounds of answers converted side by side."""
    answer = [{"metric": {"UUID": f"GPU-{n}", "job": "j"}, "values": [[300.0, "1"]]} for n in range(5000)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(10):
            points = Points(["util"], 0, 3000, 300)
            got: list = []
            threads = [threading.Thread(target=lambda: got.append(points.arrays(answer)[0])) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert len(points.labels) == 5000
            for keys in got:
                assert (keys == got[0]).all()
    finally:
        sys.setswitchinterval(interval)


def test_a_child_that_exits_says_its_status():
    with pytest.raises(YolocostError, match=r"^the test's child ended with status 3 before it finished"):
        forked.run(lambda say: os._exit(3), print, "the test's child")


def test_the_child_holds_none_of_the_parents_locks(tmp_path):
    """Its copy of the lock file's descriptor is closed at once: the lock goes with the parent."""
    database = tmp_path / "yc.duckdb"
    lock = tmp_path / "yc.duckdb.lock"

    def open_files(say) -> list[str]:
        return [os.path.realpath(fd) for fd in Path("/proc/self/fd").iterdir()]

    with db.exclusive(database, "test"):
        assert str(lock) in open_files(None)  # the parent holds it
        assert str(lock) not in forked.run(open_files, print, "the test's child")
        assert str(lock) in open_files(None)  # and still does
