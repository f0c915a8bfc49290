"""Writing a result file the user named (`-o`, the finance CSV, reports) without clobbering.

One rule for every command that writes a user-named file:

- a regular file, or a path that does not exist yet, is replaced atomically: the content
  goes into a temporary file in the same folder, is flushed to disk (fsync) and renamed
  over the target, so a reader never sees half a file and a failure leaves the old one;
- an existing file in a folder that allows no new file (no write permission, or the file
  bind-mounted writable into a read-only folder) is rewritten in place: not atomic, but what
  the permissions allow;
- a symbolic link is written through: the file it points at (resolved to the end of the
  chain) is replaced atomically beside itself, and the link stays a link;
- a character device, FIFO or socket (`-o /dev/stdout`, `/dev/null`, a named pipe) is
  written in place, never renamed over or truncated: a path naming one of this process's
  descriptors (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`) through that descriptor, as a
  shell does, whatever it leads to (a terminal, a pipe, a file the shell redirected to);
  any other is opened for appending;
- a folder or a block device is refused with one line.

On any failure no temporary file stays behind, and an OSError (disk full, permission
denied, read-only file system, ...) is the one line `PATH: cannot write: <reason>`.

The month folder of the reports (`<output_dir>/YYYY-MM/`, where `report`, `monthly` and
`export finance` without `-o` write) is yolocost's own, and there the rule is another:
whatever stands under the name of a file yolocost writes (a regular file, a symlink, a FIFO,
a socket, a device) is replaced by a rename, never written through, so a link planted there
cannot make a run (a root cron job, say) overwrite the file it points at; a folder in the way
is refused with one line. With `[reports] private = true` the month folder is made 0700 and
its files 0600, so other users can neither read them nor plant anything there.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
from pathlib import Path

from .atomic import commit, create_temporary, replacing
from .errors import YolocostError

# a process's own file descriptors: /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N
PRIVATE_FOLDER, PRIVATE_FILE = 0o700, 0o600  # [reports] private = true
FD_PATH = re.compile(r"/dev/(?P<std>stdout|stderr)|/dev/fd/(?P<fd>\d+)|/proc/(?P<pid>self|thread-self|\d+)/fd/(?P<pfd>\d+)")


def cannot_write(path: Path | str, exc: OSError) -> YolocostError:
    """The one-line error for an OSError while writing `path`."""
    return YolocostError(f"{path}: cannot write: {exc.strerror or exc}")


def write_output(path: Path | str, content: str | bytes, *, make_parents: bool = False) -> Path:
    """Write `content` (text as UTF-8, newlines untranslated) to the user-named `path` by the
    module's rule; returns `path`. `make_parents` creates missing parent folders first."""
    path = Path(path)
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        kind = _kind(path)
        if kind == "direct":
            _write_direct(path, data)
            return path
        if kind != "file":
            raise YolocostError(f"{path}: is a {kind}, not a file; give a file path")
        target = Path(os.path.realpath(path))  # a symlink (chain) is written through
        if make_parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        replace_atomically(target, data)
    except BrokenPipeError:  # a pipe's reader left early (`-o /dev/stdout | head`): as on stdout
        raise
    except OSError as exc:
        raise cannot_write(path, exc) from None
    return path


def _kind(path: Path) -> str:
    """'file' (regular, or missing: created), 'direct' (written in place) or what is refused."""
    if own_fd(path) is not None:
        return "direct"
    try:
        mode = os.stat(path).st_mode  # follows symlinks
    except FileNotFoundError:
        return "file"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISBLK(mode):
        return "block device"
    return "direct"  # character device, FIFO, socket


def own_fd(path: Path | str) -> int | None:
    """The file descriptor of this process that `path` names (/dev/stdout: 1), else None."""
    m = FD_PATH.fullmatch(os.path.abspath(path))
    if m is None or (m["pid"] not in (None, "self", "thread-self") and int(m["pid"]) != os.getpid()):
        return None
    if m["std"]:
        return 1 if m["std"] == "stdout" else 2
    return int(m["fd"] or m["pfd"])


def is_stdout(path: Path | str) -> bool:
    """Whether `path` leads to this process's standard output (`/dev/stdout`, a link to it,
    the file stdout is redirected to): a command then sends its own messages to stderr."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(1))
    except (OSError, ValueError):
        return False


def _write_direct(path: Path, data: bytes) -> None:
    """Write in place, never truncating. A path naming one of this process's descriptors is
    written through that descriptor (as a shell does for `> /dev/stdout`), so the text lands
    where the process's own output goes, in order; anything else is opened for appending."""
    fd = own_fd(path)
    if fd is not None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        _write_all(fd, data)
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def replace_atomically(target: Path, data: bytes) -> None:
    """Replace the regular file `target` (or create it) in one rename; raises OSError.

    The new file keeps the old one's permission bits (a new one gets 0666 less the umask,
    as any file the user's shell creates). Where the folder allows no new file but the
    existing target may be written (a file prepared for us in a folder we may not write),
    the target is rewritten in place instead: not atomic, but what the permissions allow."""
    try:
        fd, tmp = create_temporary(target)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and target.is_file() and os.access(target, os.W_OK):
            _rewrite_in_place(target, data)
            return
        raise
    _rename_over(fd, tmp, target, data, keep_mode=True)


def _rename_over(fd: int, tmp: Path, target: Path, data: bytes, keep_mode: bool) -> None:
    """Write `data` to the open temporary file (fd, tmp), flush it to disk and rename it over
    `target`, durably; with `keep_mode` it takes the old file's permission bits (read through a
    link). Raises OSError; no temporary file stays behind (disk full, Ctrl-C, ...)."""
    with replacing(target, tmp, durable=True, keep_mode=keep_mode):
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)


def _rewrite_in_place(target: Path, data: bytes) -> None:
    fd = os.open(target, os.O_WRONLY | os.O_TRUNC)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- the month folder, yolocost's own


def own_folder(folder: Path, private: bool = False) -> Path:
    """Create `folder` and its parents; raises OSError. With `private` the folder is 0700
    from the start, and one that exists is made 0700 too."""
    folder = Path(folder)
    if private:
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(mode=PRIVATE_FOLDER, exist_ok=True)  # a file in its place: FileExistsError
        os.chmod(folder, PRIVATE_FOLDER)
    else:
        folder.mkdir(parents=True, exist_ok=True)
    return folder


def refuse_folder_in_the_way(target: Path) -> None:
    """A folder (not a link to one) where a file of the month folder goes is the user's to
    move: one line, before anything is replaced."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise YolocostError(f"{target}: is a folder, not a file; move it away to write this report")


def move_into_own_folder(source: Path, target: Path, private: bool = False) -> None:
    """Rename the finished file `source` (same file system) to `target`, replacing whatever
    has that name, never writing through it; raises OSError."""
    refuse_folder_in_the_way(target)
    if private:
        os.chmod(source, PRIVATE_FILE)
    commit(source, target)


def write_in_own_folder(target: Path, content: str | bytes, private: bool = False) -> Path:
    """Write `content` as `target` in the month folder (created if missing) by the month
    folder's rule: a temporary file beside it, flushed to disk, renamed over whatever has
    the name. An OSError is the one line `PATH: cannot write: <reason>`."""
    target = Path(target)
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        own_folder(target.parent, private)
        refuse_folder_in_the_way(target)
        fd, tmp = create_temporary(target, PRIVATE_FILE if private else 0o666)
        _rename_over(fd, tmp, target, data, keep_mode=False)  # what has the name is replaced, not read
    except OSError as exc:
        raise cannot_write(target, exc) from None
    return target
