"""Find the files that ship with yolocost: bundled queries, sample data, report templates.

In a wheel they sit under `yolocost/_bundled/`; in a source checkout (editable install)
they are the top-level `queries/`, `sample_data/` and `reports/templates/` folders.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
_BUNDLED = PACKAGE_DIR / "_bundled"
_CHECKOUT = PACKAGE_DIR.parent
_PLACES = {
    "queries": ("queries", "queries"),
    "sample_data": ("sample_data", "sample_data"),
    "templates": ("templates", "reports/templates"),
}


def shipped_dir(name: str) -> Path:
    """The folder of shipped files called `name` (queries, sample_data or templates)."""
    bundled, checkout = _PLACES[name]
    for candidate in (_BUNDLED / bundled, _CHECKOUT / checkout):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"yolocost is installed without its {name} folder")


SQL_DIR = PACKAGE_DIR / "sql"
