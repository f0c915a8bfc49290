"""What a test run builds once, however many pytest-xdist workers run it.

A session fixture runs once per worker process; a generated sample, a backfilled TSDB or a
rendered month folder is the same bytes in each, so `once` builds it in the run's common temp
folder under a file lock and every other worker reads what the first one wrote:

    folder, value = once(tmp_path_factory, "synthetic-sample", lambda folder: write(folder))

The build writes into `folder` (empty) and returns a picklable value (or None), kept beside the
folder; a build that raised leaves none, so the next worker builds again and raises the same
error. What a worker may change (a database, a server's data folder) it copies with
`private_copy` first.
"""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path
from typing import Any, Callable

from filelock import FileLock


def run_root(tmp_path_factory) -> Path:
    """The temp folder all workers of this run share (a single process: its own base)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(tmp_path_factory, name: str, build: Callable[[Path], Any]) -> tuple[Path, Any]:
    """(folder, value): `build(folder)` run by the first worker to ask, read back by the rest."""
    root = run_root(tmp_path_factory)
    folder, done = root / f"once-{name}", root / f"once-{name}.done"
    with FileLock(str(root / f"once-{name}.lock")):
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            value = build(folder)
            done.write_bytes(pickle.dumps(value))
            return folder, value
    return folder, pickle.loads(done.read_bytes())


def private_copy(source: Path, target: Path) -> Path:
    """A worker's own copy of a file or folder `once` built (a database, a TSDB): `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)
    return target
