"""Real small and read-only file systems for the tests of failed writes (disk full, read-only).

The tests run as root (here and in CI), which may mount a tmpfs: a real `No space left on
device` or `Read-only file system` from the kernel, not a fake. Where mounting is not
allowed (an unprivileged container), `mount_tmpfs` returns the reason and each test says
which documented fault injection it falls back to.
"""

from __future__ import annotations

import contextlib
import resource
import subprocess
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "16m") -> Iterator[str | None]:
    """Mount a tmpfs of `size` at `path` (created) for the block; yields None when mounted,
    else why it could not be. Unmounted (lazily) at the end."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        run = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
                             capture_output=True, text=True, timeout=30)
    except OSError as exc:
        yield f"cannot run mount: {exc}"
        return
    if run.returncode != 0:
        yield f"mount -t tmpfs failed: {run.stderr.strip() or run.returncode}"
        return
    try:
        yield None
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


def remount_read_only(path: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True, capture_output=True, timeout=30)


def fill(folder: Path) -> None:
    """Fill the file system of `folder` to the last byte."""
    with open(folder / "filler", "wb", buffering=0) as handle:
        with contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 65536)
        with contextlib.suppress(OSError):  # the last partial block
            handle.write(b"\0")


def file_size_limit(limit: int):
    """A preexec_fn capping the size of any file the child writes (RLIMIT_FSIZE): the kernel
    then fails the write with EFBIG ('File too large'; Python ignores SIGXFSZ). The fallback
    fault for a full disk where no tmpfs can be mounted: a real failed write, another errno."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply
