"""Image digests keep every run traceable: the project CSV has each job's whole digest, the HTML
shows it whole (with the whole value as the cell's title, shown on hover), and only the PDF,
where a line has no room for 71 characters, shortens it to its algorithm and 12 hex digits."""

from __future__ import annotations

import csv
import dataclasses
import io

import duckdb
from helpers.builders import job_row, usage_run
from helpers.reportkit import MONTH, pdf_text, require_tools
from helpers.pages import cells, section

from yolocost.report import jobs as job_table_module
from yolocost.report import render_reports

DIGEST_A = "sha256:" + "0123456789abcdef" * 4
DIGEST_B = "sha256:" + "fedcba9876543210" * 4
DIGEST_C = "sha256:" + "a1" * 32


def _csv(path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))




def test_whole_digests_in_the_csv_and_the_html_short_only_in_the_listing(built_db, tmp_path):
    usage = (usage_run("2026-10-01T00:00Z", 24, "GPU-0", "a") + usage_run("2026-10-01T00:00Z", 12, "GPU-1", "b")
             + usage_run("2026-10-01T00:00Z", 6, "GPU-2", "c") + usage_run("2026-10-01T00:00Z", 6, "GPU-3", "d"))
    jobs = [job_row("a", image_tag="train-yolov8-medium-cu118", image_digest=DIGEST_A),
            job_row("b", image_tag="latest", image_digest=DIGEST_B),
            job_row("c", image_tag=None, image_digest=DIGEST_C),  # digest only
            job_row("d", image_digest=None)]                      # no digest known
    db = built_db(usage, jobs=jobs)
    config = dataclasses.replace(db.config, report_dir=tmp_path / "out")
    result = render_reports(config, MONTH, ["admin", "project:p1"], ["html"])
    stem = result.audiences[1].stem

    rows = _csv(result.folder / f"{stem}.csv")
    assert list(rows[0])[:7] == ["job_id", "user", "model_type", "gpu_models", "image_tag", "image_digest", "start"]
    assert {r["job_id"]: r["image_digest"] for r in rows} == {"a": DIGEST_A, "b": DIGEST_B, "c": DIGEST_C, "d": ""}

    page = (result.folder / f"{stem}.html").read_text(encoding="utf-8")
    table = cells(section(page, "jobs"))
    col = table[0].index("Digest")
    assert {r[0]: r[col] for r in table[1:-1]} == {"a": DIGEST_A, "b": DIGEST_B, "c": DIGEST_C, "d": ""}
    for digest in (DIGEST_A, DIGEST_B, DIGEST_C):  # whole in the cell, and whole in its title (hover)
        assert f'<span class="digest" title="{digest}">{digest}</span>' in section(page, "jobs")

    admin = (result.folder / "admin.html").read_text(encoding="utf-8")
    violations = section(admin, "tag_violations")
    for digest in (DIGEST_B, DIGEST_C):  # 'latest' and digest-only: violations, whole in the HTML too
        assert f'<span class="digest" title="{digest}">{digest}</span>' in violations

    con = duckdb.connect(str(db.path), read_only=True)
    try:
        table = job_table_module.job_table(con, MONTH, "p1", db.config.timezone, db.config.currency)
    finally:
        con.close()
    listing = table["listing"]
    lines = {line.split()[0]: line for block in listing["blocks"] for line in block}
    assert "Digest" in listing["header"]
    assert " sha256:0123456789ab " in lines["a"] and DIGEST_A[:20] not in lines["a"]  # 12 hex digits
    assert " sha256:a1a1a1a1a1a1 " in lines["c"]
    assert job_table_module.short_digest(DIGEST_B) == "sha256:fedcba987654"
    assert job_table_module.short_digest("0123456789abcdef0123") == "0123456789ab"  # no algorithm named
    assert job_table_module.short_digest(None) == ""


def test_the_sample_months_csvs_have_every_jobs_digest_and_the_pdfs_shorten_them(rendered, sample_db):
    require_tools(chromium=False, poppler=True)
    con = duckdb.connect(str(sample_db.path), read_only=True)
    try:
        digests = dict(con.execute("SELECT job_id, image_digest FROM mart_job").fetchall())
        violations = [r[0] for r in con.execute(
            "SELECT image_digest FROM mart_tag_violations WHERE month = ? AND image_digest IS NOT NULL", [MONTH])
            .fetchall()]
    finally:
        con.close()
    for audience in rendered.result.audiences[1:]:
        rows = _csv(rendered.file(audience.stem, "csv"))
        assert rows and all(r["image_digest"] == digests[r["job_id"]] and len(r["image_digest"]) == 71 for r in rows)
        page = rendered.file(audience.stem, "html").read_text(encoding="utf-8")
        assert all(f'title="{r["image_digest"]}">{r["image_digest"]}</span>' in page for r in rows)
        text = pdf_text(rendered.file(audience.stem, "pdf"), layout=True)
        assert all(r["image_digest"][:19] in text and r["image_digest"][:20] not in text for r in rows), audience
    admin = pdf_text(rendered.file("admin", "pdf"))
    assert violations and any(d[:19] in admin for d in violations)
    assert not any(d[:20] in admin for d in violations)
