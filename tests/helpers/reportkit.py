"""Helpers for the report tests: the sample month they render, the tools they need, reading a
PDF with poppler and the text an HTML page shows (the fixtures live in tests/report/conftest.py)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.browser import chromium_path

MONTH = "2026-10"
POPPLER = ("pdftotext", "pdfinfo", "pdffonts", "pdfimages", "pdftoppm")


def require_tools(*, chromium: bool = True, poppler: bool = False) -> None:
    """Fail (never skip: a suite must not pass by skipping) when a tool the test needs is missing."""
    missing = []
    if chromium and chromium_path() is None:
        missing.append("chromium")
    if poppler:
        missing += [t for t in POPPLER if shutil.which(t) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not found on PATH: run `make test-deps` (Debian packages chromium, "
                    "poppler-utils, fonts-noto-cjk)", pytrace=False)


def pdf_text(path: Path, page: int | None = None, layout: bool = False) -> str:
    cmd = ["pdftotext", "-enc", "UTF-8"] + (["-layout"] if layout else [])
    if page is not None:
        cmd += ["-f", str(page), "-l", str(page)]
    return subprocess.run(cmd + [str(path), "-"], capture_output=True, text=True, check=True).stdout


def pdf_pages(path: Path) -> int:
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


def page_parts(path: Path) -> dict[str, str]:
    """An HTML report split into what a reader or a script could see: `text` (the markup with
    plotly.js cut out, entities decoded) and `charts` (every string of every embedded figure)."""
    raw = path.read_text(encoding="utf-8")
    figures = re.findall(r'<script type="application/json" data-chart="[^"]+">(.*?)</script>', raw, re.S)
    strings: list[str] = []

    def walk(node):
        if isinstance(node, str):
            strings.append(html.unescape(node))
        elif isinstance(node, dict):
            for k, v in node.items():
                walk(k)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for fig in figures:
        walk(json.loads(fig))
    markup = re.sub(r"<script>/\*\*\s*\* plotly\.js.*?</script>", "", raw, flags=re.S)
    return {"raw": raw, "text": html.unescape(markup), "charts": "\n".join(strings), "figures": str(len(figures))}
