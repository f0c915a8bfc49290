"""The PDF reports, read back with poppler: totals, Chinese names in an embedded CJK font,
"page X of Y" on every page, table headers repeated, charts as vector graphics with every
section heading and chart title as text."""

from __future__ import annotations

import os
import re
import subprocess

import duckdb
import pytest
from helpers.reportkit import MONTH, pdf_pages, pdf_text, require_tools

from yolocost import finance


@pytest.fixture(scope="module")
def totals(sample_db):
    con = duckdb.connect(str(sample_db.path), read_only=True)
    try:
        return finance.project_totals_cents(con, MONTH), finance.total_cents(con, MONTH)
    finally:
        con.close()


def test_admin_pdf_prints_the_totals_names_and_page_numbers(rendered, totals):
    require_tools(poppler=True)
    pdf = rendered.file("admin", "pdf")
    projects, total = totals
    text = pdf_text(pdf)
    assert f"{total:,.2f}" in text
    for project, cents in projects.items():
        assert project in text, project
        assert f"{cents:,.2f}" in text, project
    assert "视觉质检" in text and "张伟" in text
    pages = pdf_pages(pdf)
    assert pages >= 5
    for page in range(1, pages + 1):
        assert f"page {page} of {pages}" in pdf_text(pdf, page), page


def test_admin_pdf_repeats_table_headers_on_every_page_a_table_spans(rendered):
    require_tools(poppler=True)
    pdf = rendered.file("admin", "pdf")
    header = re.compile(r"User\s+Project\s+Jobs\s+GPU-hours\s+Density\s+Idle GPU-hours\s+Idle cost\s+Cost")
    projects = "|".join(re.escape(a.project) for a in rendered.result.audiences[1:]) + r"|\(unlabeled\)"
    # a row of the user table: user, project, jobs, GPU-hours, density
    row = re.compile(rf"^\s*(?!job-)\S+\s+({projects})\s+\d+\s+[\d,]+\.\d\s+[\d.]+ %", re.M)
    with_rows = [p for p in range(1, pdf_pages(pdf) + 1) if row.search(pdf_text(pdf, p, layout=True))]
    # the user table (30 rows) runs over a page break, and each of its pages starts with its header
    assert len(with_rows) >= 2
    for page in with_rows:
        assert header.search(pdf_text(pdf, page, layout=True)), page


def test_pdfs_embed_a_cjk_font_and_draw_charts_as_vectors(rendered):
    require_tools(poppler=True)
    cjk = next(a for a in rendered.result.audiences if a.project == "视觉质检")
    for stem in ("admin", cjk.stem):  # (pdffonts and pdfimages take seconds a file: two files)
        pdf = rendered.file(stem, "pdf")
        fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
        assert re.search(r"Noto-Sans-CJK-SC\S*\s.*\byes\s+yes\s+yes", fonts), (stem, fonts)
        images = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
        assert len(images.strip().splitlines()) == 2, (stem, images)  # only the header lines: no raster image
        text = pdf_text(pdf)
        # chart titles, axis and legend labels are text in the vector drawing, not pixels
        assert "Cost per day by" in text and "Jobs by effective compute density" in text, stem
        assert "0–10 %" in text and "90–100 %" in text
    text = pdf_text(rendered.file(cjk.stem, "pdf"))
    assert "视觉质检" in text and "张伟" in text


def test_pdf_pages_render_to_images(rendered, tmp_path):
    require_tools(poppler=True)
    pdf = rendered.file("admin", "pdf")
    subprocess.run(["pdftoppm", "-r", "40", "-png", "-f", "1", "-l", "2", str(pdf), str(tmp_path / "p")], check=True)
    pngs = sorted(tmp_path.glob("p-*.png"))
    assert len(pngs) == 2 and all(p.stat().st_size > 5_000 for p in pngs)


def test_progress_goes_through_the_callback(rendered):
    lines = rendered.result.progress
    assert any(line.startswith("drawing ") and "charts with matplotlib" in line for line in lines)
    assert any(line.startswith("charts drawn in ") for line in lines)
    # 7 audiences x HTML, PDF; 6 project job CSVs; the summary, the finance CSV and the index
    assert sum(line.startswith("wrote ") for line in lines) == 14 + 6 + 3


def test_one_report_is_printed_in_this_process_as_the_workers_print_it(rendered, sample_db, tmp_path):
    """One PDF starts no print worker (a worker would load WeasyPrint and matplotlib as this
    process must, and a second would load them for nothing), and prints the same pages as the
    month's set, printed by the workers, has for that project."""
    import dataclasses

    from yolocost.report import pdf, render_reports

    require_tools(poppler=True)
    audience = rendered.result.audiences[1]
    lines: list[str] = []
    config = dataclasses.replace(sample_db.config, report_dir=tmp_path)
    result = render_reports(config, MONTH, [f"project:{audience.project}"], ["pdf"], progress=lines.append)
    assert [p.name for p in result.files] == [f"{audience.stem}.pdf", f"{audience.stem}.csv"]
    assert any(line.startswith("drawing ") and line.endswith("printing the PDFs in 1 process(es)") for line in lines)
    workers = min(pdf.PRINT_WORKERS, os.cpu_count() or 1)
    assert any(line.startswith("drawing ") and line.endswith(f"in {workers} process(es)")
               for line in rendered.result.progress)
    alone, in_set = result.folder / f"{audience.stem}.pdf", rendered.file(audience.stem, "pdf")
    assert pdf_pages(alone) == pdf_pages(in_set)
    made = re.compile(r"\d{4}-\d\d-\d\d\s+\d\d:\d\d\s+UTC")  # the minute each was printed
    assert len(made.findall(pdf_text(alone))) == 1
    assert _words(made.sub("(time)", pdf_text(alone))) == _words(made.sub("(time)", pdf_text(in_set)))


def _words(text: str) -> str:
    return " ".join(text.split())


def test_every_pdf_has_every_section_heading_and_chart_title(rendered, sample_db):
    """pdftotext finds, in the admin and every project PDF, each heading of the report and the
    title of each chart that report prints (drawn by matplotlib, set as text)."""
    import html as html_lib

    from yolocost.report import charts, sections

    require_tools(chromium=False, poppler=True)
    con = duckdb.connect(str(sample_db.path), read_only=True)
    try:
        for audience in rendered.result.audiences:
            text = _words(pdf_text(rendered.file(audience.stem, "pdf")))
            page = rendered.file(audience.stem, "html").read_text(encoding="utf-8")
            headings = [_words(html_lib.unescape(re.sub(r"<[^>]+>", "", h)))
                        for h in re.findall(r"<h2[^>]*>(.*?)</h2>", page, re.S)]
            assert len(headings) >= 8, audience.stem
            for heading in headings:
                assert heading in text, (audience.stem, heading)
            report = sections.collect(con, MONTH, audience.project, timezone=sample_db.config.timezone,
                                      grain_seconds=sample_db.config.grain_seconds, currency=sample_db.config.currency)
            figures = sections.figures(report, sample_db.config.currency, audience.project)
            printed = [f for name, f in figures.items() if name not in charts.HTML_ONLY]
            assert len(printed) >= 8, audience.stem
            for fig in printed:
                assert _words(html_lib.unescape(fig.layout.title.text)) in text, (audience.stem, fig.layout.title.text)
    finally:
        con.close()


def test_a_chart_slot_is_filled_with_the_chart_drawn_as_svg():
    from yolocost.report.pdf import chart_slot, with_charts

    spec = {"data": [{"type": "bar", "x": ["a"], "y": [2]}], "layout": {"title": {"text": "Spend (USD)"}}}
    page = with_charts(f"<p>before</p>{chart_slot('spend')}<p>after</p>", {"spend": spec})
    assert "<!--" not in page and page.count('<img class="svg"') == 1
    assert page.startswith("<p>before</p>") and page.endswith("<p>after</p>")


@pytest.mark.parametrize("workers", [1, 2])
def test_the_printer_writes_whole_pdfs_in_the_order_submitted(tmp_path, workers):
    from yolocost.report.pdf import Printer

    outs = [tmp_path / f"{stem}.pdf" for stem in ("b", "a", "c")]
    with Printer(workers) as printer:
        for out in outs:
            printer.submit(f"<p>report {out.stem}</p>", out)
        assert list(printer.done(wait=True)) == outs
    assert all(out.read_bytes().startswith(b"%PDF") for out in outs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pdf", "b.pdf", "c.pdf"]  # no .tmp left
