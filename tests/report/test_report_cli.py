"""`yolocost report` as a user runs it: files, progress on stderr, one-line errors, PDFs
without a browser, exit 2 without WeasyPrint's Pango, and file names that are safe for any
project name."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import pytest
from helpers.builders import yolocost
from helpers.reportkit import MONTH

from yolocost.report import project_slugs, slug


def _run(args, cwd, env=None, timeout=120):
    return yolocost(*args, cwd=cwd, env=env, timeout=timeout)


@pytest.fixture
def workdir(sample_db, tmp_path):
    """A folder with the sample config (reports go to ./reports) pointing at the sample database."""
    shutil.copyfile(sample_db.raw_dir / "yolocost.toml", tmp_path / "yolocost.toml")
    return tmp_path, ["--db", str(sample_db.path)]


def test_report_html_for_chosen_audiences(workdir):
    folder, db = workdir
    result = _run([*db, "report", "--month", MONTH, "--format", "html", "--audience", "project:视觉质检",
                   "--audience", "admin"], folder)
    assert result.returncode == 0, result.stderr
    out = folder / "reports" / MONTH
    files = sorted(p.name for p in out.iterdir())
    cjk = f"project-{slug('视觉质检')}.html"
    jobs_csv = cjk.replace(".html", ".csv")  # the project's job table comes with its report in any format
    assert files == sorted(["admin.html", cjk, jobs_csv]) and re.fullmatch(r"project-[0-9a-f]{8}\.html", cjk)
    assert str(out / "admin.html") in result.stdout and str(out / cjk) in result.stdout
    assert "reading the marts for the project 视觉质检 report" in result.stderr  # progress on stderr
    assert "wrote " in result.stderr and "Traceback" not in result.stderr


# Runs `yolocost` and then names the browser-driving modules it imported (none may be).
_NO_BROWSER = """
import runpy, sys
sys.argv = ["yolocost", *sys.argv[1:]]
try:
    runpy.run_module("yolocost", run_name="__main__", alter_sys=True)
finally:
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("kaleido", "choreographer", "playwright"))
    print("browser modules:", loaded, file=sys.stderr)
"""


def test_pdf_reports_need_no_browser(workdir):
    """With nothing on PATH (no Chromium to find) the PDFs are written, charts and all, and
    no module that drives a browser is imported."""
    folder, db = workdir
    empty = folder / "empty-path"
    empty.mkdir()
    # python -c, not the cli fixture: the script reports which browser modules the run imported
    result = subprocess.run([sys.executable, "-c", _NO_BROWSER, *db, "report", "--month", MONTH, "--format", "pdf",
                             "--audience", "admin", "--audience", "project:视觉质检"],
                            cwd=folder, env={**os.environ, "PATH": str(empty)}, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert "browser modules: []" in result.stderr
    assert re.search(r"drawing \d+ charts with matplotlib", result.stderr)
    out = folder / "reports" / MONTH
    pdfs = sorted(p.name for p in out.glob("*.pdf"))
    assert pdfs == ["admin.pdf", f"project-{slug('视觉质检')}.pdf"]
    assert all((out / p).read_bytes().startswith(b"%PDF") for p in pdfs)


def test_report_without_pango_says_how_to_install_it_and_stops(workdir):
    """A machine without Pango: WeasyPrint's import fails with an OSError from cffi. Removing
    a system library is out of a test's reach, so a `weasyprint` module ahead on the path
    raises that same error (a stand-in for the missing library)."""
    folder, db = workdir
    fake = folder / "no-pango"
    fake.mkdir()
    (fake / "weasyprint.py").write_text(
        'raise OSError("cannot load library \'libpango-1.0-0\': libpango-1.0-0: cannot open shared object file")\n',
        encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(fake), os.environ.get("PYTHONPATH")]))}
    started = time.monotonic()
    result = _run([*db, "report", "--month", MONTH], folder, env=env, timeout=60)
    assert time.monotonic() - started < 30
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "apt-get install libpango-1.0-0" in lines[0], lines
    assert "cannot load library" in lines[0]
    assert not (folder / "reports").exists()  # it stopped before writing anything


@pytest.mark.parametrize("args, message", [
    (["--month", "2026-13"], "must read YYYY-MM"),
    (["--month", "2026-12"], "no data for 2026-12"),
    (["--month", MONTH, "--audience", "project:nope"], "no project 'nope'"),
    (["--month", MONTH, "--audience", "everyone"], "is not admin, project:NAME or all"),
    (["--month", MONTH, "--format", "docx"], "'docx' is not one of html, pdf, summary, csv, index or all"),
    (["--month", MONTH, "--templates", "no-such-folder"], "templates folder not found"),
])
def test_bad_input_is_one_line_and_exit_2(workdir, args, message):
    folder, db = workdir
    result = _run([*db, "report", *args], folder)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_slugs_are_ascii_deterministic_and_unique():
    names = ["vision", "drone-survey", "Drone Survey", "drone survey", "视觉质检", "视觉质检2", "<script>alert(1)</script>",
             "../../etc", "a/b", "Ünïcode Prøject", "(unlabeled)", ".hidden", "x" * 200]
    slugs = project_slugs(names)
    assert len(set(slugs.values())) == len(names)
    assert slugs == project_slugs(list(reversed(names)))  # same names, same file names
    for name, s in slugs.items():
        assert re.fullmatch(r"[a-z0-9][a-z0-9._-]*", s) and ".." not in s and len(s) <= 64, (name, s)
    assert slugs["vision"] == "vision" and slugs["drone-survey"] == "drone-survey"
    assert slugs["Drone Survey"].startswith("drone-survey-") and slugs["Ünïcode Prøject"].startswith("unicode-pr")
    assert re.fullmatch(r"[0-9a-f]{8}", slugs["视觉质检"])
