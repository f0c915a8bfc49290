"""Chart texts printed as whole strings (report/svgtext.py), read back with poppler.

Each page is printed in a fresh process, once with WeasyPrint's own letter-by-letter SVG text
and once with the whole-string drawing, so the two can be compared word by word: the words
must be the same, in the same places (within what kerning moves), anchored the same way, and
a run must now be exactly as wide as matplotlib measured it when it placed the chart.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.reportkit import require_tools

from yolocost.report import paper, pdf, placement, svgtext

PRINT = """
import sys
from weasyprint import HTML
from yolocost.report import pdf, svgtext
svg = open(sys.argv[1], encoding="utf-8").read()
if sys.argv[3] == "whole":
    svg = svgtext.prepare(svg)
    assert svgtext.install(), "the whole-string drawing did not install"
HTML(string=f'<html><body style="margin:0">{pdf.chart_markup(svg)}</body></html>').write_pdf(sys.argv[2])
"""

Word = tuple[str, float, float, float, float]  # text, x0, y0, x1, y1 in points
PAGE_LEFT = 56.25  # WeasyPrint's default page margin (75 px), where the image's left edge lands
FONT = "font-size: 12px; font-family: 'Noto Sans'"


def small_svg(*texts: str, width: int = 200, height: int = 80) -> str:
    """A `width` x `height` pt SVG (one unit a point) of the given <text> elements."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}pt" height="{height}pt" '
            f'viewBox="0 0 {width} {height}">' + "".join(texts) + "</svg>")


def printed_words(tmp_path: Path, svg: str, how: str) -> list[Word]:
    """The words of the SVG printed by WeasyPrint in a process of its own (`how`: "stock" or
    "whole"), as pdftotext places them."""
    source, out = tmp_path / f"{how}.svg", tmp_path / f"{how}.pdf"
    source.write_text(svg, encoding="utf-8")
    subprocess.run([sys.executable, "-c", PRINT, str(source), str(out), how], check=True, timeout=120)
    boxes = subprocess.run(["pdftotext", "-enc", "UTF-8", "-bbox", str(out), "-"], capture_output=True, text=True,
                           check=True).stdout
    return [(w, float(a), float(b), float(c), float(d)) for a, b, c, d, w in
            re.findall(r'<word xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)">([^<]*)</word>',
                       boxes)]


def nearest(word: Word, others: list[Word]) -> float:
    """How far the same word printed the other way lies, at most over its four edges."""
    same = [o for o in others if o[0] == word[0]]
    assert same, f"{word[0]!r} not printed"
    return min(max(abs(a - b) for a, b in zip(word[1:], o[1:])) for o in same)


def chart_svg() -> str:
    """A chart as the PDF report draws it: Chinese and Latin categories (anchored at their
    end), a title, both axis titles (the y one turned), numbers anchored at their middle."""
    names = ["视觉质检 · 张伟", "Tesla AVAVA", "proj-03 (unlabeled)", "yolov8m", "Train-YOLO11-fast-cu121",
             "ines.silva", "(unallocated)", "wafer-AOI"]
    return pdf.fix_svg(paper.svg({
        "data": [{"type": "bar", "orientation": "h", "y": names, "x": [1200 * (i + 1) for i in range(len(names))],
                  "name": "cost"}],
        "layout": {"title": {"text": "Cost by project (USD), the Vision team's 8"},
                   "xaxis": {"title": {"text": "cost (USD)"}}, "yaxis": {"title": {"text": "project"}}},
    }))


@pytest.fixture(scope="module")
def chart_words(tmp_path_factory) -> tuple[list[Word], list[Word]]:
    require_tools(chromium=False, poppler=True)
    tmp = tmp_path_factory.mktemp("svgtext")
    svg = chart_svg()
    return printed_words(tmp, svg, "stock"), printed_words(tmp, svg, "whole")


def test_every_word_of_a_chart_prints_where_weasyprint_put_it(chart_words):
    stock, whole = chart_words
    assert sorted(w[0] for w in whole) == sorted(w[0] for w in stock)
    assert {"视觉质检", "张伟", "AVAVA", "Train-YOLO11-fast-cu121", "(USD)", "project"} <= {w[0] for w in whole}
    moved = sorted(nearest(w, stock) for w in whole)
    # the same place, but for kerning ("Te", "AV" draw closer: "Tesla AVAVA", chosen for it,
    # starts 2.3 pt further right; 1.2 pt at most on the 1,000-GPU month's charts); a text
    # anchored at its start instead of its middle or end would move by half its width or more
    assert moved[len(moved) // 2] < 0.05, moved
    assert moved[-1] < 3.0, moved
    # the category labels are anchored at their end, next to the axis: there kerning moves nothing
    for last in ("AVAVA", "Train-YOLO11-fast-cu121", "(unallocated)", "wafer-AOI", "张伟"):
        assert abs(next(w for w in whole if w[0] == last)[3] - next(w for w in stock if w[0] == last)[3]) < 0.05, last


def test_a_turned_label_anchored_at_its_end_prints_where_weasyprint_put_it(tmp_path):
    """A category label turned by 45 degrees, as matplotlib writes it: anchored at its end,
    turned about that point. pdftotext reads turned text in pieces, so the label is compared
    as the box around all of them."""
    require_tools(chromium=False, poppler=True)
    svg = small_svg('<text style="font-size: 10px; font-family: \'Noto Sans\'; text-anchor: end; fill: #1f2933" '
                    'x="150" y="100" transform="rotate(-45 150 100)">Train-YOLO11-fast-cu121</text>',
                    width=300, height=200)

    def box(how: str) -> tuple[float, float, float, float]:
        words = printed_words(tmp_path, svg, how)
        return (min(w[1] for w in words), min(w[2] for w in words), max(w[3] for w in words),
                max(w[4] for w in words))

    stock, whole = box("stock"), box("whole")
    assert max(abs(a - b) for a, b in zip(stock, whole)) < 1.0, (stock, whole)
    # the label ends at the anchor and runs down to the left of it: its box lies left of and
    # below the anchor point (150, 100) on the page
    assert whole[2] <= PAGE_LEFT + 150 + 1.0 and whole[2] > PAGE_LEFT + 150 - 8, whole
    assert whole[0] < PAGE_LEFT + 150 - 60, whole


def test_a_printed_run_is_as_wide_as_matplotlib_measured_it(tmp_path):
    """The chart's layout (placement.py) measures each label with kerning; WeasyPrint's
    letter-by-letter text came out wider ("Tesla AVAVA": 69.5 pt against 66.8)."""
    require_tools(chromium=False, poppler=True)
    text = "Tesla AVAVA"
    svg = small_svg(f'<text style="{FONT}; text-anchor: middle; fill: #000" x="200" y="50">{text}</text>',
                    width=400, height=100)
    import matplotlib

    with matplotlib.rc_context(paper._rc()):
        measured = placement.text_width(text, 12)
    widths = {}
    for how in ("stock", "whole"):
        words = printed_words(tmp_path, svg, how)
        assert [w[0] for w in words] == ["Tesla", "AVAVA"], (how, words)
        left, right = words[0][1], words[1][3]
        assert abs((left + right) / 2 - (PAGE_LEFT + 200)) < 0.3, (how, words)  # anchored at its middle
        widths[how] = right - left
    assert abs(widths["whole"] - measured) < 0.3, (widths, measured)
    assert widths["stock"] - measured > 1.5, (widths, measured)  # what the whole-string drawing mends


def test_a_combining_accent_prints_on_its_letter(tmp_path):
    require_tools(chromium=False, poppler=True)
    svg = small_svg(f'<text style="{FONT}" x="20" y="20">René</text>',
                    f'<text style="{FONT}" x="20" y="50">Rene&#x301;</text>')
    composed, decomposed = printed_words(tmp_path, svg, "whole")
    assert decomposed[0] == "René" and composed[0] == "René"
    assert abs((decomposed[3] - decomposed[1]) - (composed[3] - composed[1])) < 0.05
    stock = printed_words(tmp_path, svg, "stock")
    assert len(stock) == 3, stock  # the letter-by-letter drawing sets the accent apart, after the "e"


def test_texts_placed_letter_by_letter_are_left_to_weasyprint(tmp_path):
    """Per-letter positions (an x list, dx) are honoured: those texts keep WeasyPrint's drawing."""
    require_tools(chromium=False, poppler=True)
    svg = small_svg(f'<text style="{FONT}" x="20 60 100" y="20">abc</text>',
                    f'<text style="{FONT}" x="20" y="50" dx="0 30">xy</text>')
    stock, whole = printed_words(tmp_path, svg, "stock"), printed_words(tmp_path, svg, "whole")
    whole.sort(key=lambda w: (w[2], w[1]))
    assert [w[0] for w in whole] == ["a", "b", "c", "x", "y"]
    assert [round(w[1] - PAGE_LEFT) for w in whole[:3]] == [20, 60, 100]
    assert whole[4][1] - whole[3][3] > 25  # the 30-pt dx before "y"
    assert max(nearest(w, stock) for w in whole) < 0.01


def test_without_the_whole_string_drawing_a_chart_keeps_its_anchors(monkeypatch):
    """Where WeasyPrint is not one the drawing fits, it is not installed and WeasyPrint anchors
    each text itself: the chart's SVG is left exactly as matplotlib wrote it."""
    svg = chart_svg()
    monkeypatch.setattr(svgtext, "_installed", False)
    assert svgtext.prepare(svg) == svg
    monkeypatch.setattr(svgtext, "_installed", True)
    moved = svgtext.prepare(svg)
    assert re.search(r"text-anchor: (middle|end)", svg) and not re.search(r"text-anchor: (middle|end)", moved)
    assert moved.count(f'{svgtext.ANCHOR}="middle"') == len(re.findall(r"text-anchor: middle", svg))
    assert moved.count(f'{svgtext.ANCHOR}="end"') == len(re.findall(r"text-anchor: end", svg))


def test_a_line_separator_inside_a_label_prints_every_character(tmp_path):
    """Pango breaks a line at U+2028: such a text is left to WeasyPrint's drawing, which
    prints it whole (a run laid out as one would end at the separator)."""
    require_tools(chromium=False, poppler=True)
    svg = small_svg(f'<text style="{FONT}" x="20" y="20">vision\u2028team</text>',
                    f'<text style="{FONT}; text-anchor: end" x="180" y="50">wafer\u2029AOI</text>')
    assert svgtext.prepare(svg) == svg or not svgtext.install()
    words = printed_words(tmp_path, svg, "whole")
    assert "".join(w[0] for w in sorted(words, key=lambda w: (w[2], w[1]))) == "visionteamwaferAOI"
    assert max(nearest(w, printed_words(tmp_path, svg, "stock")) for w in words) < 0.01


def test_an_anchored_text_with_spacing_or_a_direction_keeps_weasyprints_anchor(tmp_path):
    """prepare() moves an anchor only for a text the whole-string drawing takes: one with
    letter spacing, per-letter shifts, a direction or an x list stays as WeasyPrint draws it."""
    require_tools(chromium=False, poppler=True)
    svg = small_svg(f'<text style="{FONT}; text-anchor: middle; letter-spacing: 2px" x="100" y="15">spaced</text>',
                    f'<text style="{FONT}; text-anchor: end" x="180" y="35" dx="0 4">shifted</text>',
                    f'<text style="{FONT}; text-anchor: end; direction: rtl" x="180" y="55">rtl text</text>',
                    f'<text style="{FONT}" x="20,60,100" y="75">abc</text>')
    assert svgtext.prepare(svg) == svg or not svgtext.install()
    stock, whole = printed_words(tmp_path, svg, "stock"), printed_words(tmp_path, svg, "whole")
    assert sorted(w[0] for w in whole) == sorted(w[0] for w in stock)
    assert max(nearest(w, stock) for w in whole) < 0.01
    assert sorted(round(w[1] - PAGE_LEFT) for w in whole if w[0] in "abc") == [20, 60, 100]


def test_markup_spelled_otherwise_keeps_the_anchor_where_weasyprint_draws(tmp_path):
    """prepare() reads a text's markup as WeasyPrint parses it: a style property in capitals, a
    list written with a character reference or a plus sign, single quotes; a text whose group
    sets its letter spacing keeps WeasyPrint's anchor too; an empty x is the cursor's place, as
    WeasyPrint has it. Each prints where WeasyPrint's own drawing puts it."""
    require_tools(chromium=False, poppler=True)
    tagged = small_svg(f'<text style="{FONT}; text-anchor: middle; Letter-Spacing: 2px" x="100" y="15">capitals</text>',
                       f'<text style="{FONT}; text-anchor: end" x="120&#32;180" y="30">ab</text>',
                       f"<text style=\"{FONT}; text-anchor: end\" x='180' y='45' dx='0 4'>quoted</text>",
                       f'<text style="{FONT}" x="10+50" y="60">plus</text>',
                       f'<text style="{FONT}" x="" y="75">cursor</text>', height=90)
    grouped = small_svg(f'<g style="letter-spacing: 2px"><text style="{FONT}; text-anchor: middle" x="100" y="15">'
                        f'inherited</text></g><text style="{FONT}; text-anchor: end" x="180" y="40">plain end</text>')
    if svgtext.install():
        assert svgtext.prepare(grouped) == grouped
        moved = svgtext.prepare(tagged)
        assert "text-anchor: middle" in moved and moved.count("text-anchor: end") == 2
    for name, svg in (("tagged", tagged), ("grouped", grouped)):
        (tmp_path / name).mkdir()
        stock, whole = printed_words(tmp_path / name, svg, "stock"), printed_words(tmp_path / name, svg, "whole")
        assert sorted(w[0] for w in whole) == sorted(w[0] for w in stock), name
        # letter by letter both ways: to the hundredth; "cursor" drawn whole: within kerning
        assert max(nearest(w, stock) for w in whole if w[0] != "cursor") < 0.01, name
        assert all(nearest(w, stock) < 1.2 for w in whole if w[0] == "cursor")


def test_a_weasyprint_it_was_not_written_for_is_left_alone():
    """WeasyPrint 68 and 69 call the graphical state's functions differently: on a major
    version outside VERSIONS nothing is patched (the charts print, letter by letter). In a
    fresh process: this one may have the drawing installed already."""
    check = ("import weasyprint, weasyprint.svg as s\n"
             "from yolocost.report import svgtext\n"
             "stock = dict(s.TAGS)\n"
             "weasyprint.__version__ = '69.0'\n"
             "svg = '<svg><text style=\"text-anchor: end\" x=\"1\" y=\"2\">a</text></svg>'\n"
             "print(svgtext.install(), s.TAGS == stock, svgtext.prepare(svg) == svg)\n")
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False", "True", "True"], out
