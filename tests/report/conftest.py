"""Fixtures for the report tests: the sample month rendered once per run (HTML and PDF for
every audience). The plain helpers (MONTH, require_tools, pdf_text, page_parts, ...) live in
tests/helpers/reportkit.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from helpers.reportkit import MONTH
from helpers.shared import once


@dataclasses.dataclass
class Rendered:
    config: object
    result: object
    folder: Path

    def file(self, stem: str, suffix: str) -> Path:
        return self.folder / f"{stem}.{suffix}"

    def stems(self) -> list[str]:
        return [a.stem for a in self.result.audiences]


@pytest.fixture(scope="session")
def rendered(sample_db, tmp_path_factory) -> Rendered:
    """The sample month's whole folder, rendered once per run: every report as HTML and PDF, the
    summary, the finance CSV and the index (no browser: the tests that load a page in Chromium
    ask for it themselves). Read it; do not write into it."""
    from yolocost.report import FORMATS, render_reports

    def build(folder):
        lines: list[str] = []
        result = render_reports(dataclasses.replace(sample_db.config, report_dir=folder), MONTH, ["all"], FORMATS,
                                progress=lines.append)
        result.progress = lines
        return result

    out, result = once(tmp_path_factory, "reports", build)
    return Rendered(dataclasses.replace(sample_db.config, report_dir=out), result, out / MONTH)
