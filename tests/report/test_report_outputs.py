"""`yolocost report` writes a month's set whole or not at all: a failure part way (disk full,
a read-only month folder, a template that raises) is one line with exit status 2 and leaves
the month folder as it was, with no temporary file; reports of projects the month no longer
holds are removed, other files are left alone. The month folder is yolocost's own: a
symlink, FIFO or other file standing where a file of the set goes is replaced, never written
through (a folder there is one line), and `[reports] private = true` keeps other users out."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest
from helpers.reportkit import MONTH, require_tools
from helpers.builders import yolocost
from helpers.smallfs import file_size_limit, remount_read_only, tmpfs

OLD = "<p>the report of an earlier run</p>\n"


def _run(args, cwd, **kwargs):
    return yolocost(*args, cwd=cwd, timeout=300, **kwargs)


@pytest.fixture
def workdir(sample_db, tmp_path):
    """A folder with the sample config (reports go to ./reports) pointing at the sample database."""
    shutil.copyfile(sample_db.raw_dir / "yolocost.toml", tmp_path / "yolocost.toml")
    return tmp_path, ["--db", str(sample_db.path)]


def _earlier_set(month_folder: Path) -> dict[str, str]:
    """An earlier run's reports (and a file of the user's) in the month folder: what it holds."""
    month_folder.mkdir(parents=True, exist_ok=True)
    for name in ("admin.html", "project-drone-survey.html", "notes.txt"):
        (month_folder / name).write_text(OLD, encoding="utf-8")
    return _contents(month_folder)


def _contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") if p.is_file() else "<folder>" for p in folder.iterdir()}


def _temporaries(folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob("*") if ".tmp" in p.name]


def _one_error(result) -> str:
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if not line.startswith("yolocost: ")]
    assert len(errors) == 1 and errors[0].startswith("error: "), result.stderr
    return errors[0]


def test_stale_project_reports_are_removed_and_other_files_kept(workdir, tmp_path):
    folder, db = workdir
    month = folder / "reports" / MONTH
    _earlier_set(month)
    for name in ("project-gone.html", "project-gone.pdf"):  # a project the month no longer holds
        (month / name).write_text(OLD, encoding="utf-8")
    elsewhere = tmp_path / "published" / "admin.html"  # a link planted where the admin report goes
    elsewhere.parent.mkdir()
    elsewhere.write_text(OLD, encoding="utf-8")
    (month / "admin.html").unlink()
    (month / "admin.html").symlink_to(elsewhere)

    # what runs killed outright (SIGKILL) left: a staging folder and an older version's temporary file,
    # dated two hours back; one of a run that may still be going (just now) is not touched
    killed = [month / ".report-k1ll3d.tmp", month / ".project-gone.pdf.tmp", month / ".report-running.tmp"]
    killed[0].mkdir()
    (killed[0] / "admin.html").write_text("half", encoding="utf-8")
    killed[1].write_text("half", encoding="utf-8")
    killed[2].mkdir()
    two_hours_ago = time.time() - 7200
    for path in killed[:2]:
        os.utime(path, (two_hours_ago, two_hours_ago))

    result = _run([*db, "report", "--month", MONTH, "--audience", "admin", "--format", "html"], folder)
    assert result.returncode == 0, result.stderr
    assert not killed[0].exists() and not killed[1].exists() and killed[2].is_dir()
    killed[2].rmdir()
    for name in ("project-gone.html", "project-gone.pdf"):
        assert not (month / name).exists()
        assert f"removed stale report {month / name} (no project of that name held a GPU in {MONTH})" in result.stderr
    contents = _contents(month)
    # drone-survey is still a project of the month: its report stays, though this run did not render it
    assert contents["project-drone-survey.html"] == OLD and contents["notes.txt"] == OLD
    assert not (month / "admin.html").is_symlink() and "Cost by project" in contents["admin.html"]
    assert elsewhere.read_text(encoding="utf-8") == OLD  # replaced, not written through
    assert sorted(contents) == ["admin.html", "notes.txt", "project-drone-survey.html"]
    assert _temporaries(folder) == []


SET = ["--audience", "admin", "--audience", "project:drone-survey", "--format", "html,summary,csv,index"]
SET_FILES = ["admin.html", f"finance-{MONTH}.csv", "index.html", "project-drone-survey.csv",
             "project-drone-survey.html", "summary.html"]


def _regular_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if stat.S_ISREG(os.lstat(p).st_mode))


def test_links_and_fifos_in_the_month_folder_are_replaced_never_written_through(workdir, tmp_path):
    """A link planted where a file of the set goes (to a file outside, to a folder, dangling)
    and a FIFO there are replaced by the set's files; the files the links point at keep their
    bytes, and nothing new appears outside."""
    folder, db = workdir
    month = folder / "reports" / MONTH
    month.mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    victims = {}
    for name in ("admin.html", "summary.html", f"finance-{MONTH}.csv"):
        victim = outside / f"victim-{name}"
        victim.write_bytes(f"precious {name}\n".encode())
        victims[victim] = victim.read_bytes()
        (month / name).symlink_to(victim)
    (month / "index.html").symlink_to(outside)  # a link to a folder
    (month / "project-drone-survey.html").symlink_to(outside / "new.html")  # dangling
    os.mkfifo(month / "project-drone-survey.csv")  # writing into it would block the run

    result = _run([*db, "report", "--month", MONTH, *SET], folder)
    assert result.returncode == 0, result.stderr
    assert _regular_files(month) == SET_FILES == sorted(p.name for p in month.iterdir())
    assert {v: v.read_bytes() for v in victims} == victims
    assert sorted(p.name for p in outside.iterdir()) == sorted(v.name for v in victims)
    assert "Cost by project" in (month / "admin.html").read_text(encoding="utf-8")
    assert _temporaries(folder) == [] and _temporaries(outside) == []


def test_export_finance_replaces_a_link_in_the_month_folder_but_writes_through_one_it_is_given(workdir, tmp_path):
    """Without -o the CSV goes into the month folder, which is yolocost's own; a path the user
    names with -o keeps the rule of result files: a symlink is written through."""
    folder, db = workdir
    month = folder / "reports" / MONTH
    month.mkdir(parents=True)
    victim = tmp_path / "victim.csv"
    victim.write_bytes(b"precious\n")
    csv = month / f"finance-{MONTH}.csv"
    csv.symlink_to(victim)
    result = _run([*db, "export", "finance", "--month", MONTH], folder)
    assert result.returncode == 0, result.stderr
    assert not csv.is_symlink() and csv.read_text(encoding="utf-8").startswith("BilledCost,")
    assert victim.read_bytes() == b"precious\n"

    csv.unlink()
    csv.symlink_to(victim)
    named = _run([*db, "export", "finance", "--month", MONTH, "-o", str(csv)], folder)
    assert named.returncode == 0, named.stderr
    assert csv.is_symlink() and victim.read_text(encoding="utf-8").startswith("BilledCost,")


def test_a_folder_where_a_file_of_the_set_goes_is_one_line_and_moves_nothing(workdir):
    folder, db = workdir
    month = folder / "reports" / MONTH
    (month / "summary.html").mkdir(parents=True)
    (month / "summary.html" / "mine.txt").write_text(OLD, encoding="utf-8")
    line = _one_error(_run([*db, "report", "--month", MONTH, *SET], folder))
    assert line == f"error: {month / 'summary.html'}: is a folder, not a file; move it away to write this report"
    assert sorted(p.name for p in month.iterdir()) == ["summary.html"]
    assert (month / "summary.html" / "mine.txt").read_text(encoding="utf-8") == OLD


def _private(folder: Path) -> None:
    config = folder / "yolocost.toml"
    text = config.read_text(encoding="utf-8")
    assert text.count("[reports]\n") == 1
    config.write_text(text.replace("[reports]\n", "[reports]\nprivate = true\n"), encoding="utf-8")


def _modes(folder: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(os.lstat(p).st_mode) for p in [folder, *folder.iterdir()]}


def test_private_reports_keep_other_users_out(workdir):
    """`[reports] private = true`: the month folder 0700 (one that was open before too), its
    files 0600, from `report` and from `export finance`; by default the umask decides."""
    folder, db = workdir
    month = folder / "reports" / MONTH
    umask = os.umask(0)
    os.umask(umask)
    assert _run([*db, "report", "--month", MONTH, "--audience", "admin", "--format", "html"], folder).returncode == 0
    assert _modes(month) == {MONTH: 0o777 & ~umask, "admin.html": 0o666 & ~umask}

    os.chmod(month, 0o755)
    _private(folder)
    result = _run([*db, "report", "--month", MONTH, *SET], folder)
    assert result.returncode == 0, result.stderr
    assert _modes(month) == {MONTH: 0o700, **{name: 0o600 for name in SET_FILES}}

    shutil.rmtree(folder / "reports")
    result = _run([*db, "export", "finance", "--month", MONTH], folder)
    assert result.returncode == 0, result.stderr
    assert _modes(month) == {MONTH: 0o700, f"finance-{MONTH}.csv": 0o600}


def test_a_full_disk_leaves_the_earlier_set_and_no_temporary_file(workdir):
    folder, db = workdir
    reports = folder / "reports"
    with tmpfs(reports, size="8m") as cannot_mount:  # one HTML report (about 5 MB) fits, the second does not
        before = _earlier_set(reports / MONTH)
        if cannot_mount is None:
            result = _run([*db, "report", "--month", MONTH, "--format", "html"], folder)
            reason = "No space left on device"
        else:
            # Fault injection (no tmpfs can be mounted here: see `cannot_mount`): the kernel's file
            # size limit fails the first report's write with EFBIG instead of a full disk.
            print(f"no tmpfs ({cannot_mount}): RLIMIT_FSIZE stands in for a full disk")
            result = _run([*db, "report", "--month", MONTH, "--format", "html"], folder,
                          preexec_fn=file_size_limit(1_000_000))
            reason = "File too large"
        assert _one_error(result) == f"error: {reports / MONTH}: cannot write: {reason}"
        assert "Traceback" not in result.stderr
        assert _contents(reports / MONTH) == before  # not one report of the new set replaced an old one
        assert _temporaries(reports) == []


def test_a_full_disk_while_printing_pdfs_leaves_the_earlier_set(workdir, monkeypatch):
    """The PDFs print in worker processes: their failed write is the same one line."""
    require_tools(chromium=True)
    folder, db = workdir
    reports = folder / "reports"
    with tmpfs(reports, size="400k") as cannot_mount:  # a few hundred kB: not even the admin PDF fits
        before = _earlier_set(reports / MONTH)
        if cannot_mount is None:
            result = _run([*db, "report", "--month", MONTH, "--format", "pdf", "--audience", "admin"], folder)
            assert _one_error(result) == f"error: {reports / MONTH}: cannot write: No space left on device"
        else:
            # Fault injection (no tmpfs can be mounted here: see `cannot_mount`; a file size limit
            # would stop Chromium itself): printed in this process, WeasyPrint's write fails with
            # ENOSPC after writing part of the file.
            import errno

            from yolocost.errors import YolocostError
            from yolocost.report import pdf, render_reports

            print(f"no tmpfs ({cannot_mount}): an ENOSPC from write_pdf stands in for a full disk")

            def full(html, out):
                Path(out).write_bytes(b"%PDF-1.7 partial")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

            monkeypatch.setattr(pdf.Printer.__init__, "__defaults__", (1,))
            monkeypatch.setattr(pdf, "write_pdf", full)
            config = _config(folder, db)
            with pytest.raises(YolocostError) as info:
                render_reports(config, MONTH, ["admin"], ["pdf"])
            assert str(info.value) == f"{reports / MONTH}: cannot write: No space left on device"
        assert _contents(reports / MONTH) == before
        assert _temporaries(reports) == []


def _config(folder: Path, db: list[str]):
    """The workdir's config as the CLI reads it there (reports in ./reports, the sample database)."""
    import dataclasses

    from yolocost.config import load_config

    config = load_config(folder / "yolocost.toml").with_database(Path(db[1]))
    return dataclasses.replace(config, report_dir=folder / "reports")


def test_a_read_only_month_folder_is_one_line(workdir, monkeypatch):
    folder, db = workdir
    month = folder / "reports" / MONTH
    with tmpfs(month, size="1m") as cannot_mount:
        before = _earlier_set(month)
        if cannot_mount is None:
            # root ignores permission bits: a read-only mount is what stops it
            remount_read_only(month)
            assert _one_error(_run([*db, "report", "--month", MONTH, "--format", "html"], folder)) == (
                f"error: {month}: cannot write: Read-only file system")
        else:
            # Fault injection (no tmpfs can be mounted here: see `cannot_mount`): creating the
            # staging folder in the month folder fails as a read-only file system makes it fail.
            import errno
            import tempfile

            from yolocost.errors import YolocostError
            from yolocost.report import render_reports

            print(f"no tmpfs ({cannot_mount}): an EROFS from mkdtemp stands in for a read-only mount")

            def read_only(*args, dir=None, **kwargs):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(Path(dir) / ".report-x.tmp"))

            monkeypatch.setattr(tempfile, "mkdtemp", read_only)
            config = _config(folder, db)
            with pytest.raises(YolocostError, match=r"cannot write: Read-only file system"):
                render_reports(config, MONTH, ["admin"], ["html"])
        assert _contents(month) == before


def test_a_month_folder_that_is_a_file_is_one_line(workdir):
    folder, db = workdir
    (folder / "reports").mkdir()
    (folder / "reports" / MONTH).write_text("not a folder", encoding="utf-8")
    line = _one_error(_run([*db, "report", "--month", MONTH, "--format", "html"], folder))
    assert line == f"error: {folder / 'reports' / MONTH}: cannot create the month's reports folder: File exists"


@pytest.mark.parametrize("line, error", [
    ("<p>{{ 1/0 }}</p>", "ZeroDivisionError while rendering: division by zero"),
    ("<p>{{ \"x\" | money(1, 2, 3) }}</p>", "TypeError while rendering: "),
    ("{% if %}", "TemplateSyntaxError: "),
])
def test_an_override_that_fails_names_its_file_and_line_and_writes_nothing(workdir, line, error):
    folder, db = workdir
    mine = folder / "my-templates"
    (mine / "sections").mkdir(parents=True)
    (mine / "sections" / "actions.html").write_text(f'<section id="actions">\n{line}\n</section>\n', encoding="utf-8")
    before = _earlier_set(folder / "reports" / MONTH)
    result = _run([*db, "report", "--month", MONTH, "--format", "html", "--templates", str(mine)], folder)
    assert _one_error(result).startswith(f"error: {mine / 'sections' / 'actions.html'}:2: {error}")
    assert _contents(folder / "reports" / MONTH) == before
    assert _temporaries(folder) == []
