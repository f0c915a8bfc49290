"""The HTML reports in real headless Chromium: offline, every chart drawn, no console error,
no request leaving the machine, hostile labels shown as text."""

from __future__ import annotations

import dataclasses
import json
import re
from decimal import Decimal

import duckdb
import pytest
from helpers.browser import open_page, open_pages
from helpers.builders import job_row, result_row, usage_run
from helpers.reportkit import MONTH, page_parts, require_tools

from yolocost import finance
from yolocost.report import render_reports

HOSTILE_PROJECT = "<script>alert(1)</script>"
HOSTILE_USER = '<img src=x onerror="window.__pwned=1;alert(2)">'


def cents(value: Decimal) -> str:
    return f"{value:,.2f}"


# each chart's paper and plot colour, its value axis's zero line colour and hover label alignment as
# plotly.js drew them (a category axis has no zero line)
LOOK = """JSON.stringify(Array.from(document.querySelectorAll("div.plot")).map(function (d) {
  var l = d._fullLayout;
  return [l.paper_bgcolor, l.plot_bgcolor, l.xaxis.zerolinecolor || l.yaxis.zerolinecolor, l.hoverlabel.align];
}))"""


def test_every_html_report_loads_offline_and_draws_every_chart(rendered, tmp_path):
    stems = rendered.stems()
    assert stems[0] == "admin" and len(stems) == 7  # admin + the sample month's six projects
    pages = [rendered.file(s, "html") for s in stems]
    shots = {"admin": tmp_path / "admin.png", next(s for s in stems if not re.match(r"project-[a-z-]+$", s)):
             tmp_path / "project-cjk.png"}
    runs = open_pages([(p, shots.get(s), {"look": LOOK}) for s, p in zip(stems, pages)])
    for stem, page, run in zip(stems, pages, runs):
        figures = int(page_parts(page)["figures"])
        assert figures >= 8, stem
        assert run.charts_error is None, (stem, run.charts_error)
        assert run.charts == run.charts_drawn == run.svg_count == figures, (stem, run)
        assert run.errors == [], (stem, run.errors)
        assert run.dialogs == []
        assert run.outside_requests == [], (stem, run.outside_requests)
        assert run.failed == [], (stem, run.failed)
        assert run.requests == [page.resolve().as_uri()]  # the page itself and nothing else
        # every chart drawn in plotly_white's look, which the page gives each figure once
        # (plotly.js's own defaults: zero lines #444, hover labels aligned "auto")
        assert set(map(tuple, json.loads(run.values["look"]))) == {("white", "white", "#EBF0F8", "left")}, \
            (stem, run.values["look"])
    for shot in shots.values():  # a full-page screenshot of a readable page, not a blank one
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 100_000


def test_request_check_sees_a_request_that_would_leave_the_machine(tmp_path):
    """Control for the test above: a page that asks the web for something is caught."""
    require_tools(chromium=True)
    page = tmp_path / "leaky.html"
    page.write_text('<!doctype html><body data-charts-drawn="0"><img src="https://cdn.example.com/x.png">'
                    '<script>console.error("boom")</script></body>', encoding="utf-8")
    run = open_page(page, timeout=20)
    assert run.outside_requests == ["https://cdn.example.com/x.png"]
    assert any("boom" in e for e in run.errors)


def test_html_is_self_contained_with_plotly_inlined_once(rendered):
    for stem in rendered.stems():
        raw = rendered.file(stem, "html").read_text(encoding="utf-8")
        assert len(re.findall(r"\* plotly\.js v\d", raw)) == 1, stem
        assert raw.count("<script>") == 2  # plotly.js and the page's drawing script; figures are JSON data
        assert not re.search(r"<script[^>]+src=|<link\b|<iframe\b|@import|url\(\s*['\"]?(https?:)?//", raw), stem
        markup = page_parts(rendered.file(stem, "html"))["text"]  # the page without plotly.js
        assert "mathjax" not in markup.lower(), stem  # nothing loads MathJax (plotly.js only asks for it)
        assert not re.search(r"(src|href)=\"(https?:)?//", markup), stem


def test_html_prints_the_finance_totals(rendered, sample_db):
    con = duckdb.connect(str(sample_db.path), read_only=True)
    try:
        totals = finance.project_totals_cents(con, MONTH)
        total = finance.total_cents(con, MONTH)
    finally:
        con.close()
    assert sum(totals.values()) == total
    admin = page_parts(rendered.file("admin", "html"))["text"]
    assert cents(total) in admin
    for project, value in totals.items():
        assert project in admin and cents(value) in admin, project
    for audience in rendered.result.audiences[1:]:
        text = page_parts(rendered.file(audience.stem, "html"))["text"]
        assert audience.project in text
        assert cents(totals[audience.project]) in text
        assert cents(total) not in text  # the cluster appears only as the project's share
    assert "视觉质检" in page_parts(rendered.file(rendered.result.audiences[-1].stem, "html"))["text"]


@pytest.fixture
def hostile_db(built_db):
    """A month with a project and a user whose names are markup, next to a plain project."""
    usage = (usage_run("2026-10-01T00:00Z", 36, "GPU-0", "j1", util=2.0)
             + usage_run("2026-10-01T03:00Z", 36, "GPU-0", "j1", util=90.0)
             + usage_run("2026-10-01T00:00Z", 24, "GPU-1", "j2", util=80.0)
             + usage_run("2026-10-02T00:00Z", 12, "GPU-1", None))
    jobs = [job_row("j1", project=HOSTILE_PROJECT, user=HOSTILE_USER, image_tag="latest",
                    model_type="<b>yolo</b>", end="2026-10-01T06:00Z"),
            job_row("j2", project="plain", user="bob", end="2026-10-01T02:00Z")]
    return built_db(usage, jobs=jobs, results=[result_row("j1", 0.5, 0.3), result_row("j2", 0.4, 0.2)])


def test_hostile_labels_render_as_text_and_run_nothing(hostile_db, tmp_path):
    require_tools(chromium=True)
    config = dataclasses.replace(hostile_db.config, report_dir=tmp_path / "out")
    result = render_reports(config, MONTH, ["all"], ["html"])
    hostile = next(a for a in result.audiences if a.project == HOSTILE_PROJECT)
    assert re.fullmatch(r"project-script-alert-1-script-[0-9a-f]{8}", hostile.stem)
    probes = {
        "text": "document.body.innerText",
        "svg_text": "Array.from(document.querySelectorAll('.plot text')).map(t => t.textContent).join('\\n')",
        "scripts": "Array.from(document.scripts).filter(s => s.type !== 'application/json').length",
        "images": "document.images.length",
        "pwned": "typeof window.__pwned",
    }
    pages = [result.folder / f"{a.stem}.html" for a in result.audiences if a.project != "plain"]
    assert len(pages) == 2  # admin and the hostile project
    for page, run in zip(pages, open_pages([(p, None, probes) for p in pages])):
        raw = page.read_text(encoding="utf-8")
        assert HOSTILE_PROJECT not in raw and "<img src=x" not in raw
        assert run.dialogs == [] and run.errors == [] and run.outside_requests == []
        assert run.charts_drawn == run.charts and run.charts >= 5
        v = run.values
        assert v["scripts"] == 2 and v["images"] == 0 and v["pwned"] == "undefined"
        assert HOSTILE_PROJECT in v["text"] and HOSTILE_USER in v["text"]
        assert HOSTILE_USER in v["svg_text"]  # chart labels show the name literally
        assert "<b>yolo</b>" in v["svg_text"] or "<b>yolo</b>" in v["text"]


def test_sparse_months_render_and_draw(built_db, tmp_path):
    """Capacity nobody held; and an unlabeled job next to a project with no finished run and a
    digest-only image, in January (the previous month is in another year)."""
    require_tools(chromium=True)
    idle = built_db(usage_run("2026-10-01T00:00Z", 12, "GPU-0", None))
    mixed = built_db(usage_run("2026-01-01T00:00Z", 12, "GPU-0", "j1") + usage_run("2026-01-01T00:00Z", 12, "GPU-1", "j2"),
                     jobs=[job_row("j1", project=None), job_row("j2", project="p", image_tag=None)])
    files = []
    for db, month, stems in ((idle, MONTH, ["admin"]), (mixed, "2026-01", ["admin", "project-p"])):
        config = dataclasses.replace(db.config, report_dir=tmp_path / month)
        result = render_reports(config, month, ["all"], ["html"])
        assert [a.stem for a in result.audiences] == stems
        files += [f for f in result.files if f.suffix == ".html"]  # not the project job CSVs
    for page, run in zip(files, open_pages([(f, None, None) for f in files])):
        assert run.errors == [] and run.charts_error is None, (page, run)
        assert run.charts == run.charts_drawn == run.svg_count > 0
    admin = (tmp_path / "2026-01" / "2026-01" / "admin.html").read_text(encoding="utf-8")
    assert "no data for 2025-12" in admin and "No run with a final validation ended in 2026-01" in admin
