"""The months test_months and test_archive_final share: July to September 2026 (UTC) of 16 GPUs
at the 300 s grain, their config (retention 30 days), and a month's documents and query answers
as bytes and rows to compare before and after a prune or a load. Plain functions: each module's
fixtures call them (helpers hold no fixtures)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import subprocess
from pathlib import Path

from helpers.builders import make_config, write_month

from yolocost import load, queries
from yolocost.report import render_reports

MONTHS = ("2026-07", "2026-08", "2026-09")
PRICES = [("A100", "2.93"), ("V100", "1.10")]
NOW = dt.datetime(2026, 9, 10, tzinfo=dt.timezone.utc)  # retention 30 days: the cutoff is Aug 11, July is prunable


def write_months(base: Path) -> dict[str, Path]:
    """Each of MONTHS' raw folder under `base`, by month."""
    return {m: write_month(base / m, make_config(base), m) for m in MONTHS}


def _config(folder: Path, prices=None, **extra):
    cfg = make_config(folder, prices=prices or PRICES, energy_prices=["0.25"], ingest={"retention_days": 30}, **extra)
    return dataclasses.replace(cfg, report_dir=folder / "reports")


def load_two_months(raw_months: dict[str, Path], folder: Path):
    """July and August loaded, month by month, into one database in `folder`; its config."""
    cfg = _config(folder)
    for m in MONTHS[:2]:
        load.load_parquet_dir(cfg, raw_months[m])
    return cfg


GENERATED = re.compile(rb"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")
PDF_SIZE = re.compile(rb'(\.pdf">PDF</a><span class="size" title=")\d+ bytes">[^<]*')  # in index.html


def documents(cfg, month: str, folder: Path) -> dict[str, bytes]:
    """The month's HTML and PDF reports, summary, index, finance CSV and job CSVs, by file name:
    the bytes, with the minute each was generated at masked. A PDF is not the same bytes from
    one rendering to the next (it embeds the time it was made, and its chart images vary by a
    few bytes), so a PDF counts as the text on its pages, and its size in the index is masked."""
    out = dataclasses.replace(cfg, report_dir=folder)
    result = render_reports(out, month, ["all"], ["html", "pdf", "summary", "csv", "index"])
    files = sorted(result.folder.iterdir())
    assert any(p.suffix == ".pdf" for p in files)
    return {p.name: PDF_SIZE.sub(rb"\1(size)", GENERATED.sub(b"generated (time)",
                                                              pdf_text(p) if p.suffix == ".pdf" else p.read_bytes()))
            for p in files}


def pdf_text(path: Path) -> bytes:
    return subprocess.run(["pdftotext", "-layout", "-enc", "UTF-8", str(path), "-"], capture_output=True,
                          check=True).stdout


def named_queries(cfg, month: str) -> dict[str, list]:
    out = {}
    for q in queries.available():
        if any(p.name == "month" for p in q.params):
            out[q.name] = queries.run(cfg.database, q, {"month": month})[1]
    return out
