"""Result files never clobber what the user named (`export finance -o`, `query -o`).

A regular file is replaced atomically; a symlink is written through (the file it points at
changes, the link stays a link); a FIFO, a device or /dev/stdout is written in place, never
replaced by a regular file; a failed write (disk full) leaves the old file and no temporary
file, and is one line `error: PATH: cannot write: <reason>` with exit status 2.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from helpers.builders import EUR_CONFIG, cli_argv, job_row, usage_row, write_raw, yolocost
from helpers.smallfs import file_size_limit, fill, remount_read_only, tmpfs

CONFIG = EUR_CONFIG
T0 = "2026-03-02T00:00Z"
QUERY = "SELECT 'a,b' AS name, 42 AS n UNION ALL SELECT 'c', 7 ORDER BY n"
QUERY_CSV = 'name,n\nc,7\n"a,b",42\n'  # ordered by n


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    """A folder with a config and a database holding three jobs of one 5-minute interval."""
    folder = tmp_path_factory.mktemp("lab")
    (folder / "yolocost.toml").write_text(CONFIG)
    write_raw(folder / "raw", [usage_row(T0, "g1", "ja"), usage_row(T0, "g2", "jb"), usage_row(T0, "g3", "jc")],
              [job_row("ja", project="p-a"), job_row("jb", project="p-b"), job_row("jc", project="p-c")])
    assert yolocost("load", "raw", cwd=folder).returncode == 0
    return folder


@pytest.fixture(scope="module")
def finance_csv(lab) -> bytes:
    """The month's finance CSV as the command writes it to its default path."""
    done = yolocost("export", "finance", "--month", "2026-03", cwd=lab)
    assert done.returncode == 0, done.stderr
    data = (lab / "reports" / "2026-03" / "finance-2026-03.csv").read_bytes()
    assert data.startswith(b"BilledCost,") and data.count(b"\r\n") == 4  # header and three rows
    return data


def _finance(lab: Path, out: Path | str, **kwargs) -> subprocess.CompletedProcess:
    # subprocess.run, not the cli fixture: a test hands the CLI a stdout of its own
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kwargs}
    return subprocess.run(cli_argv("export", "finance", "--month", "2026-03", "-o", str(out)), cwd=lab, timeout=120,
                          **pipes)


def _query(lab: Path, out: Path | str, **kwargs) -> subprocess.CompletedProcess:
    return yolocost("query", QUERY, "-f", "csv", "-o", str(out), cwd=lab, text=False, timeout=120, **kwargs)


def _leftovers(*folders: Path) -> list[str]:
    return [p.name for f in folders for p in f.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("command", ["finance", "query"])
def test_a_symlink_is_written_through_and_stays_a_link(lab, finance_csv, tmp_path, command):
    real = tmp_path / "shared" / "result.csv"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "latest.csv"
    link.symlink_to(real)
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "shared" / "new.csv")
    run = _finance if command == "finance" else _query
    expected = finance_csv if command == "finance" else QUERY_CSV.encode()
    for path in (link, dangling):
        done = run(lab, path)
        assert done.returncode == 0, done.stderr
        assert path.is_symlink() and os.readlink(path) == str(real if path == link else real.parent / "new.csv")
    assert real.read_bytes() == expected and (real.parent / "new.csv").read_bytes() == expected
    assert _leftovers(tmp_path, real.parent) == []


@pytest.mark.parametrize("command", ["finance", "query"])
def test_a_fifo_is_written_in_place_not_replaced(lab, finance_csv, tmp_path, command):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    done = (_finance if command == "finance" else _query)(lab, fifo)
    reader.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert received == [finance_csv if command == "finance" else QUERY_CSV.encode()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _leftovers(tmp_path) == []


def test_dev_stdout_delivers_the_csv_and_stays_a_device(lab, finance_csv, tmp_path):
    """`-o /dev/stdout` pipes the CSV (the summary line goes to stderr); a link of the user's
    pointing at /dev/stdout is written through it, and neither is replaced by a file."""
    before = os.readlink("/dev/stdout")
    link = tmp_path / "to-stdout"
    link.symlink_to("/dev/stdout")
    for out in ("/dev/stdout", link):
        done = _finance(lab, out)
        assert done.returncode == 0, done.stderr
        assert done.stdout == finance_csv
        assert b"wrote 3 rows to " in done.stderr
    queried = _query(lab, "/dev/stdout")
    assert queried.returncode == 0 and queried.stdout == QUERY_CSV.encode()
    assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == before
    assert link.is_symlink() and os.readlink(link) == "/dev/stdout"
    # a character device: /dev/null stays one
    assert _finance(lab, "/dev/null").returncode == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_stdout_redirected_to_a_file_gets_the_csv_once(lab, finance_csv, tmp_path):
    """With the shell's `> file`, /dev/stdout leads to a regular file: written through the
    process's own descriptor, so the CSV is the file's content (not renamed over it)."""
    target = tmp_path / "captured.csv"
    with open(target, "wb") as handle:
        done = _finance(lab, "/dev/stdout", stdout=handle)
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == finance_csv
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("command", ["finance", "query"])
def test_a_full_disk_keeps_the_old_file_and_leaves_no_temporary_file(lab, tmp_path, command):
    folder = tmp_path / "small"
    run = _finance if command == "finance" else _query
    with tmpfs(folder, size="1m") as cannot_mount:
        if cannot_mount is None:
            (folder / "result.csv").write_text("old\n")
            fill(folder)
            done = run(lab, folder / "result.csv")
            reason = "No space left on device"
        else:
            # Fault injection (no tmpfs can be mounted here: see `cannot_mount`): the kernel's
            # file size limit fails the write of any file past 3 bytes with EFBIG instead.
            print(f"no tmpfs ({cannot_mount}): RLIMIT_FSIZE stands in for a full disk")
            folder.mkdir(exist_ok=True)
            (folder / "result.csv").write_text("old\n")
            done = run(lab, folder / "result.csv", preexec_fn=file_size_limit(3))
            reason = "File too large"
        stderr = done.stderr.decode()
        assert done.returncode == 2, stderr
        assert stderr.splitlines()[-1] == f"error: {folder / 'result.csv'}: cannot write: {reason}"
        assert "Traceback" not in stderr
        assert (folder / "result.csv").read_text() == "old\n"
        assert _leftovers(folder) == []


def test_a_file_in_a_folder_that_allows_no_new_file_is_rewritten_in_place(lab, tmp_path, monkeypatch):
    """A file prepared for the output in a folder we may not write (the temporary file cannot
    be made beside it) is still written, in place; a new file there is one line of error."""
    folder = tmp_path / "locked"
    prepared = tmp_path / "prepared.csv"
    prepared.write_text("old\n")
    with tmpfs(folder, size="1m") as cannot_mount:
        if cannot_mount is None:
            # root ignores permission bits: a read-only folder with a writable file bind-mounted into it
            (folder / "result.csv").write_text("")
            remount_read_only(folder)
            subprocess.run(["mount", "--bind", str(prepared), str(folder / "result.csv")], check=True)
            try:
                done = _query(lab, folder / "result.csv")
                assert done.returncode == 0, done.stderr
                refused = _query(lab, folder / "new.csv")
            finally:
                subprocess.run(["umount", str(folder / "result.csv")], check=True)
            assert prepared.read_bytes() == QUERY_CSV.encode()
            assert refused.returncode == 2
            assert refused.stderr.decode().splitlines()[-1] == (
                f"error: {folder / 'new.csv'}: cannot write: Read-only file system")
        else:
            # Fault injection (no tmpfs can be mounted here: see `cannot_mount`): creating the
            # temporary file fails with EACCES, as in a folder without write permission.
            import errno

            from yolocost import outputs

            print(f"no tmpfs ({cannot_mount}): an EACCES from the temporary file stands in")

            def denied(target):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(target))

            monkeypatch.setattr(outputs, "create_temporary", denied)
            outputs.write_output(prepared, QUERY_CSV)
            assert prepared.read_bytes() == QUERY_CSV.encode()
            with pytest.raises(outputs.YolocostError, match="cannot write: Permission denied"):
                outputs.write_output(tmp_path / "new.csv", QUERY_CSV)


def test_a_folder_is_refused_in_one_line(lab, tmp_path):
    from yolocost.errors import YolocostError
    from yolocost.outputs import write_output

    with pytest.raises(YolocostError, match=r"is a folder, not a file; give a file path"):
        write_output(tmp_path, "x")
    # the CLI refuses it before running anything, in the same one line (not click's usage text)
    for folder in (tmp_path, "."):
        done = _query(lab, folder)
        assert done.returncode == 2, done.stderr
        assert done.stderr.decode() == f"error: {folder}: is a folder, not a file; give a file path\n"
