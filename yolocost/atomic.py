"""Replacing a file in one rename: the content goes into a temporary file beside the target
and is renamed over it once complete, so a reader sees the old file or the new one, never
half of one, and a failure leaves the old one and no temporary file.

    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")

What may stand under the target's name, and whether it is written through or replaced, is
the caller's rule (`outputs.py` for the files a user names); this module only writes beside
it and renames.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path
from typing import Iterator


def temporary_beside(target: Path) -> Path:
    """The hidden name `.<name>.tmp` in the target's folder (same file system: the rename is atomic)."""
    return target.with_name(f".{target.name}.tmp")


def create_temporary(target: Path, mode: int = 0o666) -> tuple[int, Path]:
    """A new hidden file `.<name>.XXXXXXXX.tmp` in the target's folder, created with `mode`
    (less the umask) and open for writing: never a file or link someone else put there."""
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(target.parent))  # pragma: no cover


@contextlib.contextmanager
def replacing(target: Path | str, tmp: Path | None = None, *, durable: bool = False,
              keep_mode: bool = False) -> Iterator[Path]:
    """The temporary path to write (`tmp`, else a new file of `create_temporary`: never a
    name someone else could have put a link under), renamed over `target` when the block
    ends without an error and removed when it raises (disk full, Ctrl-C, ...).

    `durable`: the content is flushed to disk before the rename, and the rename after it.
    `keep_mode`: the new file takes the old one's permission bits (read through a link)."""
    target = Path(target)
    if tmp is None:
        fd, tmp = create_temporary(target)
        os.close(fd)
    try:
        yield tmp
        if durable:
            _sync(tmp)
        if keep_mode:
            with contextlib.suppress(FileNotFoundError):
                os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        commit(tmp, target, durable=durable)
    except BaseException:
        discard(tmp)
        raise


def commit(tmp: Path, target: Path, *, durable: bool = False) -> None:
    """Rename the complete file `tmp` over `target` (whatever has that name is replaced, never
    written through); with `durable` the folder is synced after, so the rename is on disk too."""
    os.replace(tmp, target)
    if durable:
        sync_folder(Path(target).parent)


def discard(tmp: Path) -> None:
    """Remove a temporary file that will not be renamed, if it is there."""
    with contextlib.suppress(OSError):
        Path(tmp).unlink(missing_ok=True)


def _sync(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except PermissionError:  # a file its owner may write but not read
        fd = os.open(path, os.O_WRONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_folder(folder: Path) -> None:
    """Make a rename in `folder` durable (best effort: not every file system allows it)."""
    with contextlib.suppress(OSError):
        _sync(folder)
