"""A project's report holds nothing of any other project: no name, no user of theirs, no job
id, no figure of theirs, in the HTML, in the embedded chart JSON or in the PDF's text."""

from __future__ import annotations

import re

import duckdb
import pytest
from helpers.reportkit import MONTH, page_parts, pdf_text, require_tools

from yolocost import finance


@pytest.fixture(scope="module")
def sample_jobs(sample_db):
    con = duckdb.connect(str(sample_db.path), read_only=True)
    try:
        jobs = con.execute("SELECT job_id, project_name, user_name FROM stg_jobs").fetchall()
        printed = finance.project_totals_cents(con, MONTH)
        total = finance.total_cents(con, MONTH)
    finally:
        con.close()
    return jobs, printed, total


def _present(token: str, text: str) -> bool:
    """`token` as a whole word (job-000017 is not inside job-000175)."""
    return re.search(rf"(?<![\w.-]){re.escape(token)}(?![\w-])", text) is not None


def test_project_reports_show_no_other_project(rendered, sample_jobs):
    require_tools(poppler=True)
    jobs, printed, total = sample_jobs
    audiences = rendered.result.audiences[1:]
    assert len(audiences) == 6
    for audience in audiences:
        own = audience.project
        own_jobs = {j for j, p, _ in jobs if p == own}
        own_users = {u for _, p, u in jobs if p == own}
        other_projects = {p for _, p, _ in jobs if p != own} | {"(unallocated)"}
        other_users = {u for _, p, u in jobs if p != own and u} - own_users
        other_jobs = {j for j, p, _ in jobs if p != own}
        other_figures = {f"{c:,.2f}" for p, c in printed.items() if p != own} | {f"{total:,.2f}"}
        assert other_projects and other_users and other_jobs

        parts = page_parts(rendered.file(audience.stem, "html"))
        sources = {"html": parts["text"], "chart json": parts["charts"],
                   "pdf": pdf_text(rendered.file(audience.stem, "pdf"))}
        for where, text in sources.items():
            # the checks below look at a real report: its own jobs (and name and total) are there
            assert any(_present(j, text) for j in own_jobs), (audience.stem, where)
            if where != "chart json":
                assert own in text and f"{printed[own]:,.2f}" in text, (audience.stem, where)
            for name in other_projects:
                assert name not in text, (audience.stem, where, name)
            for user in other_users:
                assert not _present(user, text), (audience.stem, where, user)
            for job in other_jobs:
                assert not _present(job, text), (audience.stem, where, job)
            for figure in other_figures:
                assert figure not in text, (audience.stem, where, figure)


def test_admin_report_shows_every_project_and_bucket(rendered, sample_jobs):
    jobs, printed, _ = sample_jobs
    parts = page_parts(rendered.file("admin", "html"))
    for project in printed:
        assert project in parts["text"] and project in parts["charts"]
