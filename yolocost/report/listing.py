"""Wide tables for the PDF as aligned monospaced text in page-sized blocks.

WeasyPrint lays a table out cell by cell: a few hundred rows of a dozen columns cost seconds
a report (a 370-row job table 3.5 s of work, the same rows as text lines 0.5 s). A long
table is therefore printed as lines of text in a monospaced CJK font, its font size chosen
so the widest line fits the page, split into blocks that each fill a page (`pre.listing` in
print.css: one block a page). The HTML keeps the table; the rows and figures are the same.

The columns line up only if each cell is padded by the width the font really draws it at.
"Noto Sans Mono CJK SC" is monospaced for ASCII alone: a CJK character is two columns wide,
but Cyrillic, Greek and accented Latin letters take their own widths (Ж 1.8 columns, é 1.1).
A cell's width is therefore read from the font's advance widths (FreeType, as matplotlib
bundles it), and the blanks before each cell are counted from where the line really ends:
every cell starts within half a column of its place. Without the font (or with matplotlib's
font list older than the font) the terminal's rule is used (East Asian wide characters take
two columns). Cells are composed (NFC), so a letter with a combining accent is the font's own
letter. Left as it is: a character the font lacks (an Arabic name, an emoji) is set by Pango
in another font, which then sets the blanks after it too, and the rest of that line shifts.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from typing import Sequence

from ..money import Currency
from ..tables import display_width
from .. import templating

FONT = "Noto Sans Mono CJK SC"  # print.css's pre.listing font

# a half-width character of a monospaced font is 0.5 em wide, a line 1.25 em high
LANDSCAPE = (768 / 0.5, 470 / 1.25)  # characters and lines at 1 pt: 271 x 176 mm, A4 landscape less the header
PORTRAIT = (521 / 0.5, 700 / 1.25)   # 184 x 247 mm, A4 portrait less the margins and the header
MAX_PT = 7.0


@functools.lru_cache(maxsize=1)
def _font():
    """The listing font as FreeType reads it (through matplotlib, which finds the face in
    its collection file), once a process; None where the machine lacks it."""
    from matplotlib import font_manager, ft2font

    entry = next((f for f in font_manager.fontManager.ttflist if f.name == FONT and f.weight == 400), None)
    if entry is None:
        return None
    return ft2font.FT2Font(entry.fname, face_index=getattr(entry, "index", 0))


@functools.lru_cache(maxsize=8192)
def _columns(ch: str) -> float:
    """The half-em columns the listing font advances by for `ch`: its advance width in font
    units over half an em; a character the font lacks counts as the terminal counts it."""
    from matplotlib import ft2font

    font = _font()
    if font is None or not font.get_char_index(ord(ch)):
        return display_width(ch)
    glyph = font.load_char(ord(ch), ft2font.LoadFlags.NO_SCALE)
    return glyph.horiAdvance / (font.units_per_EM / 2)


def _composed(text: str) -> str:
    """The text with each letter and its accents as one character where Unicode has one
    (NFC): "e" + U+0308 becomes the font's own "ë"."""
    return unicodedata.normalize("NFC", text)


def _drawn(text: str) -> float:
    """The columns the listing font draws `text` in (composed), unrounded."""
    return sum(_columns(ch) for ch in _composed(text))


def width(text: str) -> int:
    """The columns (half an em each) the listing font draws `text` in, rounded."""
    return round(_drawn(text))


def _line(cells: Sequence[str], widths: Sequence[int], right: Sequence[bool]) -> str:
    """Cells two columns apart, each in its column (`widths`), on the right of it where
    `right` says. The blanks before a cell are counted from where the line really ends so
    far (the font's widths, unrounded): a cell starts within half a column of its place,
    however many cells before it were drawn a fraction wider than the columns they count."""
    out: list[str] = []
    at = start = 0.0
    for cell, columns, to_right in zip(map(_composed, cells), widths, right):
        drawn = _drawn(cell)
        begin = start + (columns - drawn if to_right else 0.0)
        fill = max(round(begin - at), 1 if out else 0)
        out.append(" " * fill + cell)
        at += fill + drawn
        start += columns + 2
    return "".join(out).rstrip()


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], total: Sequence[str] | None,
            right: set[str] | frozenset[str], page: tuple[float, float] = LANDSCAPE, heading_pt: float = 150,
            marks: Sequence[str] | None = None) -> dict:
    """The rows as aligned text: `header`, `blocks` of row lines (the first block leaves
    `heading_pt` points for what stands above it on its page), the `rule` and `total` lines
    (empty without a total) and the `font_size` (pt, at most MAX_PT) at which the widest line
    fits the page. A row of one cell is a line of its own (a note between rows). `marks`
    gives each row a class name ("" for none; e.g. the HTML's muted "bucket" rows), returned
    as `marks` block by block (empty without)."""
    table = [r for r in rows if len(r) > 1]
    if any(len(r) != len(header) for r in [*table, *([total] if total else [])]):
        raise ValueError(f"a listing row has not the header's {len(header)} cells")  # a template's mistake
    widths = [max(width(r[i]) for r in [header, *([total] if total else []), *table]) for i in range(len(header))]

    to_right = [name in right for name in header]

    def line(row: Sequence[str]) -> str:
        return row[0] if len(row) == 1 else _line(row, widths, to_right)

    chars = sum(widths) + 2 * (len(widths) - 1)
    size = min(MAX_PT, math.floor(page[0] / chars * 10) / 10)
    lines = [line(r) for r in rows]
    per_page = int(page[1] / size) - 3  # the header, the rule and the total
    first = max(1, per_page - int(heading_pt / (1.25 * size)))
    starts = [0, *range(first, len(lines), per_page)]
    ends = [*starts[1:], len(lines)]
    blocks = [(lines[a:b], list(marks[a:b]) if marks else []) for a, b in zip(starts, ends) if b > a]
    return {"header": line(header), "blocks": [b for b, _ in blocks], "marks": [m for _, m in blocks] if marks else [],
            "rule": "-" * chars, "total": line(total) if total else "", "font_size": size}


LONG = 40  # rows: a section's table longer than this prints as a listing (the HTML keeps the table)


def listed(header: Sequence[str], rows: Sequence[Sequence[str]], total: Sequence[str] | None = None,
           text_columns: int = 1, heading_pt: float = 150, marks: Sequence[str] | None = None) -> dict:
    """For a section template (`listed` in its context, used by the `grid` macro): a long
    table whose cells the template formatted with its own filters, as a listing on portrait
    A4; its first `text_columns` columns are text (left-aligned), the others figures
    (right-aligned). A None cell prints empty (yolocost.templating.cell, as in the HTML table)."""
    def cells(row: Sequence) -> list[str]:
        return [str(templating.cell(v)) for v in row]

    return aligned(header, [cells(r) for r in rows], cells(total) if total else None,
                   frozenset(header[text_columns:]), PORTRAIT, heading_pt, marks)


TAG_HEADER = ("Model type", "GPU model", "GPUs", "Image tag", "Runs", "Epochs", "GPU-hours", "Epochs/GPU-h",
              "Peak GiB", "Median GiB", "Fit/GPU", "Cost", "Cost/epoch", "Speed vs fastest", "Memory vs fastest")
_TAG_RIGHT = frozenset(TAG_HEADER[4:])


def tag_comparison(section: dict, currency: Currency) -> dict:
    """The image tag comparison's printed rows (each group's `printed_per_group` fastest, then
    a line saying how many slower tags the HTML has) as aligned text on portrait A4, with the
    same figures as the HTML table (the template's number and money formats)."""
    from ..templating import money, number

    ends = section["printed_per_group"]
    rows: list[tuple[str, ...]] = []
    for x in section["rows"]:
        if x["rank_in_group"] <= ends:
            fastest = x["rank_in_group"] == 1
            rows.append((
                x["model_type"] or "", x["gpu_model_short"] or "", str(x["gpus"]), x["image_tag"] or "",
                str(x["runs"]), str(x["epochs"]), number(x["gpu_hours"]), number(x["epochs_per_gpu_hour"], 2),
                number(x["peak_mem_gib"], 2), number(x["median_peak_mem_gib"], 2),
                "" if x["fits_per_gpu"] is None else str(x["fits_per_gpu"]),
                money(x["cost"], currency), money(x["cost_per_epoch"], currency),
                "fastest" if fastest else ("" if x["speed_vs_fastest_pct"] is None else f"{x['speed_vs_fastest_pct']:+.1f} %"),
                "" if fastest or x["memory_vs_fastest_pct"] is None else f"{x['memory_vs_fastest_pct']:+.1f} %"))
        elif x["rank_in_group"] == ends + 1:
            more = x["group_size"] - ends
            rows.append((f"  … {more} slower tag{'' if more == 1 else 's'} of {x['model_type'] or ''} on "
                         f"{x['gpu_model_short'] or ''} (not printed: see the HTML report) …",))
    n = len(section["rows"])
    total = ("Total", "", "", f"{n} tag{'' if n == 1 else 's'}", str(section["runs"]), str(section["epochs"]),
             number(section["gpu_hours"]), "", "", "", "", money(section["cents"], currency), "", "", "")
    return aligned(TAG_HEADER, rows, total, _TAG_RIGHT, PORTRAIT, heading_pt=260)
