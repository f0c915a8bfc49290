"""Logging never decides the exit status: a stderr that cannot be written (a full log disk,
a reader that left, a closed descriptor) loses the progress and warnings, never the run.
Each check runs the real CLI with stderr broken one way and compares what it wrote with a
run whose stderr works: the same files, the same bytes, exit status 0."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.builders import cli_argv
from helpers.onegpu import CONFIG, write_raw

MONTH = "2026-10"
CLI = cli_argv()  # subprocess.run, not the cli fixture, where the tests below break stderr themselves
PARTIAL = "warning: the database holds 2026-10-01..2026-10-01 of October 2026"


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Path:
    """One GPU-hour of 2026-10-01, loaded by the real loader: a month held in part, whose
    report and export warn."""
    from yolocost.config import load_config
    from yolocost.load import load_parquet_dir

    folder = tmp_path_factory.mktemp("stderr-db")
    (folder / "yolocost.toml").write_text(CONFIG)
    load_parquet_dir(load_config(folder / "yolocost.toml"), write_raw(folder / "raw"))
    return folder / "yc.duckdb"


@pytest.fixture
def lab(database, tmp_path) -> Path:
    (tmp_path / "yolocost.toml").write_text(CONFIG)
    shutil.copy(database, tmp_path / "yc.duckdb")
    return tmp_path


def _full(argv, cwd, env=None) -> tuple[int, bytes]:
    """stderr to /dev/full: every write fails with ENOSPC, as on a full log disk."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run([*CLI, *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=full, timeout=300, env=env)
    return done.returncode, done.stdout


def _pipe_closed_early(argv, cwd, env=None) -> tuple[int, bytes]:
    """stdout and stderr into one pipe whose reader is gone before the first line (`2>&1 |
    head -0`, or `| head -1` once its line came): every write fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([*CLI, *argv], cwd=cwd, stdout=write, stderr=subprocess.STDOUT, timeout=300, env=env)
    finally:
        os.close(write)
    return done.returncode, b""


def _stderr_closed(argv, cwd, env=None) -> tuple[int, bytes]:
    """stderr closed before the start (`2>&-`): no descriptor 2 at all (EBADF)."""
    done = subprocess.run([*CLI, *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=300,
                          env=env, preexec_fn=lambda: os.close(2))
    return done.returncode, done.stdout


BROKEN = {"dev-full": _full, "pipe-closed": _pipe_closed_early, "stderr-closed": _stderr_closed}


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _without_stamps(files: dict[str, bytes]) -> dict[str, bytes]:
    import re

    stamp = re.compile(rb"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    return {name: stamp.sub(b"", data) for name, data in files.items()}


@pytest.mark.parametrize("quiet", [(), ("-q",)], ids=["progress", "quiet"])
@pytest.mark.parametrize("broken", BROKEN)
def test_report_writes_its_files_whatever_stderr_does(lab, broken, quiet, cli):
    argv = [*quiet, "report", "--month", MONTH, "--format", "html,summary,csv,index"]
    ok = cli(*argv, cwd=lab, timeout=300)
    assert ok.returncode == 0 and PARTIAL in ok.stderr, ok.stderr  # -q or not, the warning comes
    expected = _without_stamps(_files(lab / "reports"))
    shutil.rmtree(lab / "reports")

    status, stdout = BROKEN[broken](argv, lab)
    assert status == 0
    assert _without_stamps(_files(lab / "reports")) == expected
    if broken != "pipe-closed":
        assert stdout.decode().startswith(f"wrote 6 file(s) for {MONTH} into ")


@pytest.mark.parametrize("out", [None, "f.csv"], ids=["month-folder", "named-file"])
@pytest.mark.parametrize("broken", BROKEN)
def test_export_finance_writes_the_csv_whatever_stderr_does(lab, broken, out, cli):
    argv = ["-q", "export", "finance", "--month", MONTH, *(("-o", out) if out else ())]
    target = lab / out if out else lab / "reports" / MONTH / f"finance-{MONTH}.csv"
    ok = cli(*argv, cwd=lab, timeout=300)
    assert ok.returncode == 0 and ok.stderr.startswith(PARTIAL), ok.stderr
    expected = target.read_bytes()
    target.unlink()

    status, stdout = BROKEN[broken](argv, lab)
    assert status == 0
    assert target.read_bytes() == expected
    if broken != "pipe-closed":
        assert stdout.decode().startswith("wrote ")


NO_BROWSER = {**os.environ, "PATH": "/nonexistent"}  # nothing to find on PATH: the PDFs need none


def _demo_outputs(folder: Path) -> dict[str, bytes]:
    """The demo's files, stamps taken out; a PDF (which prints the time it was made, so its
    compressed size varies by a few bytes) as its first bytes, so it must exist and be a
    PDF, and its size in the index as a placeholder."""
    import re

    size = re.compile(rb'(\.pdf">[^<]*</a><span class="size" title=")\d+ bytes">[^<]*')
    return {name: data[:5] if name.endswith(".pdf") else size.sub(rb"\1N bytes\">", data)
            for name, data in _without_stamps(_files(folder)).items()}


@pytest.fixture(scope="module")
def demo_files(demo_run) -> dict[str, bytes]:
    """What the demo writes when stderr works (the run the tests share)."""
    ok, out = demo_run
    assert ok.returncode == 0, ok.stderr
    found = _demo_outputs(out / "reports")
    assert sum(name.endswith(".pdf") for name in found) == 7 and set(
        data for name, data in found.items() if name.endswith(".pdf")) == {b"%PDF-"}
    return found


@pytest.mark.parametrize("broken", BROKEN)
def test_demo_builds_everything_whatever_stderr_does(demo_files, tmp_path, broken):
    """The demo runs the monthly flow without Prometheus: load, build, reports, summary,
    finance CSV, index."""
    status, _ = BROKEN[broken](["demo", "--out", str(tmp_path / "demo")], tmp_path, NO_BROWSER)
    assert status == 0
    assert _demo_outputs(tmp_path / "demo" / "reports") == demo_files
    assert (tmp_path / "demo" / "yolocost.duckdb").is_file()


def test_a_query_result_on_a_closed_stdout_is_still_status_2(lab):
    """stdout results keep their rule: output that did not all arrive is status 2, even when
    the line saying so has nowhere to go."""
    status, _ = _pipe_closed_early(["query", "SELECT * FROM range(200000)", "-f", "csv"], lab)
    assert status == 2


def test_a_failing_run_still_fails_when_its_error_cannot_be_written(lab):
    status, _ = _full(["report", "--month", "2026-09", "--format", "csv"], lab)
    assert status == 2
    assert not (lab / "reports" / "2026-09").exists()
