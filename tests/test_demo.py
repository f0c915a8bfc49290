"""`yolocost demo` as a new user runs it: a database, a summary, the reports and where they are."""

import html
import os
import re
import shutil
from decimal import ROUND_HALF_UP, Decimal

import duckdb

from yolocost import finance
from yolocost.summary import write_summary


def test_demo_builds_database_summary_and_reports_and_can_be_rerun(demo_run, tmp_path, cli):
    out = tmp_path / "demo"
    reports = out / "reports" / "2026-10"
    # first run: everything, PDF included (the run the tests share, copied here to run in again)
    result, first = demo_run
    assert result.returncode == 0, result.stderr
    assert "reports as HTML and PDF" in result.stdout
    shutil.copytree(first, out, symlinks=True)
    pdfs = sorted(reports.glob("*.pdf"))
    assert [p.name for p in pdfs][:1] == ["admin.pdf"] and len(pdfs) == 7
    for pdf in pdfs:
        pdf.unlink()
    # a rerun replaces the demo database cleanly; with nothing on PATH (no browser to find) it
    # writes every PDF again
    empty = tmp_path / "empty-path"
    empty.mkdir()
    result = cli("demo", "--out", str(out), "--force", env={**os.environ, "PATH": str(empty)}, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert str(out / "yolocost.duckdb") in result.stdout
    assert str(out / "reports" / "2026-10" / "summary.html") in result.stdout
    assert "reports as HTML and PDF" in result.stdout and "no PDF" not in result.stdout
    assert len(list(reports.glob("*.pdf"))) == 7
    assert "building models" in result.stderr and "wrote " in result.stderr  # progress goes to stderr

    con = duckdb.connect(str(out / "yolocost.duckdb"), read_only=True)
    total, jobs = con.execute("SELECT total_cost, jobs FROM mart_cluster_month WHERE month = '2026-10'").fetchone()
    projects = con.execute("SELECT project, cost FROM mart_project_month WHERE month = '2026-10'").fetchall()
    printed = finance.project_totals_cents(con, "2026-10")
    ledger = dict(con.execute("SELECT project, sum(cost) FROM ledger_charges WHERE month = '2026-10' "
                              "GROUP BY project").fetchall())
    con.close()
    page = (out / "reports" / "2026-10" / "summary.html").read_text(encoding="utf-8")
    billed_total = total.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)
    assert f"{billed_total:,.2f} USD" in page
    # each project's cost as the cent ledger has it (cents that add up to the total), not
    # its own rounding: the two differ by a cent for some project of this month
    assert any(cost.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP) != ledger[name] for name, cost in projects)
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    cells = [re.findall(r"<td>(.*?)</td>", row, re.S) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]
    assert {html.unescape(c[0]): Decimal(c[-1].replace(",", "")) for c in cells} == ledger
    assert sum(ledger.values()) == billed_total == sum(printed.values())
    # the demo writes the month folder as `report` does: the finance CSV and the index too
    assert (reports / "finance-2026-10.csv").is_file() and str(reports / "index.html") in result.stdout
    index = (reports / "index.html").read_text(encoding="utf-8")
    assert 'href="summary.html"' in index and 'href="finance-2026-10.csv"' in index and "视觉质检" in index
    assert "视觉质检" in page
    admin = (reports / "admin.html").read_text(encoding="utf-8")
    for name, cents in printed.items():
        assert html.escape(name) in admin and f"{cents:,.2f}" in admin
    assert len(list(reports.glob("project-*.html"))) == 6
    assert not list(out.glob("*.building*"))

    # the printed hint works: the demo folder's own config finds the database
    listed = cli("query", "most_expensive_jobs", "-p", "month=2026-10", cwd=out, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"job-\d{6}", listed.stdout)


def test_demo_refuses_a_folder_that_is_not_empty(tmp_path, cli):
    """`demo --out` into a folder holding a config and a database would overwrite both:
    refused in one line naming the folder, and nothing in it changes."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "yolocost.toml").write_text('[cluster]\nname = "production"\n', encoding="utf-8")
    (out / "yolocost.duckdb").write_bytes(b"not the demo's")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = cli("demo", "--out", str(out), timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"error: {out}: folder is not empty (yolocost.duckdb, yolocost.toml); give --force to replace the demo's "
        "config, database and reports there, or choose another --out"]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    helped = cli("demo", "--help", timeout=None)
    assert "--force" in helped.stdout


def test_summary_escapes_hostile_labels(built_db, tmp_path):
    from helpers.builders import job_row, usage_row

    hostile = "<script>alert(1)</script>"
    db = built_db([usage_row("2026-10-01T00:00:00Z", gpu="GPU-0", job="j1")],
                  jobs=[job_row("j1", project=hostile, user="u")])
    page = write_summary(db.config, "2026-10", tmp_path / "s.html").read_text(encoding="utf-8")
    assert hostile not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
