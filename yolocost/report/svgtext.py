"""Chart text drawn by WeasyPrint as whole strings, not letter by letter.

WeasyPrint (up to 70 at least) draws every SVG `<text>` one character at a time: a Pango
layout for each letter, placed where the previous one ended, so that per-letter `x`, `dx` or
`rotate` lists can be honoured. On the printed charts that is half of WeasyPrint's work on a
chart (12,494 characters in the 42 charts of the 1,000-GPU month's admin report and three
project reports: 4.3 of 8.6 CPU-s), and it shapes no string as a whole: no kerning, and a
combining accent is drawn apart from its letter (WeasyPrint issue 2249). Each text anchored at
its middle or end is also drawn into a group of its own that is shifted once its width is
known.

The texts matplotlib writes are plain: one `x` and one `y`, no per-letter lists. `install()`
puts a drawing of such a text as one Pango run in front of WeasyPrint's own, which still
draws every other text; `prepare()` moves a chart text's anchor where only that drawing reads
it, so it shifts the run by the width it has just laid out instead of WeasyPrint making a
group. The words land where WeasyPrint put them within kerning (1.2 pt at most on those
charts), the chart's share of WeasyPrint's work halves and the PDF is a quarter the size.

Both are no-ops on a WeasyPrint whose SVG internals this was not written against (a major
version outside `VERSIONS`: 68 and 69 call the graphical state's functions differently): the
charts then print as before, only slower. A text that is not plain (per-letter lists or
spacing, a baseline alignment, a direction, a line separator inside it) keeps its anchor and
WeasyPrint's own drawing.
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Mapping
from math import inf
from typing import Any, Callable, cast

ANCHOR = "yolocost-anchor"  # where prepare() puts a text's anchor for the whole-string drawing
VERSIONS = (70,)  # WeasyPrint major versions whose SVG text internals this was written against
# attributes that place, space or align letters one by one, set a baseline or a direction:
# WeasyPrint's own drawing handles those
_PER_LETTER = ("dx", "dy", "rotate", "textLength", "letter-spacing", "display-anchor", "dominant-baseline",
               "alignment-baseline", "direction")
# a text as matplotlib writes it, with its anchor in its style
_ANCHORED = re.compile(r'<text style="([^"]*?)text-anchor: (middle|end);? ?([^"]*)"([^>]*)>([^<]*)</text>')
_ATTRIBUTE = re.compile(r"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")  # in an opening tag
_PROPERTY = re.compile(r'\s*([\w-]+)\s*:\s*([^;]*)')  # in a style attribute
# one of those names set anywhere but in a text's own opening tag (a group, a style sheet):
# WeasyPrint passes it down to the texts, which then keep its drawing
_PER_LETTER_ANYWHERE = re.compile(r"(?:^|[\s;\"'{])(?:" + "|".join(re.escape(n) for n in _PER_LETTER) + r")\s*[:=]", re.I)
_TEXT_OPENING = re.compile(r"<text\b[^>]*>")


def plain(attributes: Mapping[str, str], text: str) -> bool:
    """Whether a text is one WeasyPrint may draw whole: none of the `_PER_LETTER` names as an
    attribute or style property, one x and one y at most, no line separator in its characters.
    The one rule both `prepare()` (on the SVG's markup) and the drawing (on the node WeasyPrint
    parsed) apply, so that a text keeps its anchor exactly where the drawing leaves it to
    WeasyPrint."""
    return (not any(name in attributes for name in _PER_LETTER)
            and all(len(_listed(attributes.get(axis, ""))) <= 1 for axis in ("x", "y"))
            and "\u2028" not in text and "\u2029" not in text)


def _listed(value: str) -> list[str]:
    """An SVG coordinate list's values, split by WeasyPrint's own normalize() (imported here:
    both callers run only once `install()` has found WeasyPrint)."""
    from weasyprint.svg.utils import normalize

    return normalize(value).split()


def _tag_attributes(opening: str) -> dict[str, str]:
    """An opening tag's attributes as WeasyPrint's parsed node holds them: values with their
    character references decoded, the properties of its style among them, named in lower case."""
    found = {name: html.unescape(double or single) for name, double, single in _ATTRIBUTE.findall(opening)}
    found.update((name.lower(), value.strip()) for name, value in _PROPERTY.findall(found.pop("style", "")) if name)
    return found


_installed: bool | None = None  # None: not tried yet


def install() -> bool:
    """Draw plain SVG texts as whole strings from now on in this process (idempotent);
    False where this WeasyPrint is not one it fits."""
    global _installed
    if _installed is None:
        _installed = _patch()
    return _installed


def prepare(svg: str) -> str:
    """A chart's SVG with each anchored text's anchor moved where the whole-string drawing
    reads it; unchanged where that drawing is not installed (WeasyPrint then anchors)."""
    if not install() or _PER_LETTER_ANYWHERE.search(_TEXT_OPENING.sub("", svg)):
        return svg  # WeasyPrint anchors, and draws, every text

    def moved(m: re.Match) -> str:
        opening = f' style="{m.group(1)}{m.group(3)}"{m.group(4)}'
        if not plain(_tag_attributes(opening), html.unescape(m.group(5))):
            return m.group(0)  # drawn by WeasyPrint, which reads only text-anchor
        return f'<text style="{m.group(1)}{m.group(3)}" {ANCHOR}="{m.group(2)}"{m.group(4)}>{m.group(5)}</text>'

    return _ANCHORED.sub(moved, svg)


def _patch() -> bool:
    try:
        import weasyprint
        import weasyprint.svg as svg_package
        from weasyprint.css.properties import INITIAL_VALUES
        from weasyprint.draw.text import draw_emojis, draw_first_line
        from weasyprint.matrix import Matrix
        from weasyprint.svg.bounding_box import extend_bounding_box
        from weasyprint.svg.utils import size
        from weasyprint.text.line_break import split_first_line
    except (ImportError, OSError):
        return False
    if weasyprint.__version__.split(".")[0] not in {str(v) for v in VERSIONS}:
        return False
    text_module: Any = sys.modules.get("weasyprint.svg.text")
    stock: Any = getattr(text_module, "text", None)
    tags = getattr(svg_package, "TAGS", None)
    if (not callable(stock) or not isinstance(tags, dict) or tags.get("text") is not stock
            or getattr(svg_package, "text", None) is not stock
            or not all(hasattr(text_module, name) for name in ("Style", "TextBox"))):
        return False
    letter_by_letter = cast(Callable[[Any, Any, float], None], stock)

    def whole(svg: Any, node: Any, font_size: float) -> None:
        attrib = node.attrib
        if not node.text or not plain(attrib, node.text):
            return letter_by_letter(svg, node, font_size)
        style = _style(text_module.Style, INITIAL_VALUES, svg, node, font_size)
        layout, _, resume, width, height, baseline = split_first_line(node.text, style, svg.context, inf, 0)
        if resume is not None:  # more than one line after all (plain() excludes the separators it knows)
            return letter_by_letter(svg, node, font_size)
        x = size(attrib["x"], font_size, svg.inner_width) if attrib.get("x") else None  # x="": the cursor's
        y = size(attrib["y"], font_size, svg.inner_height) if attrib.get("y") else None
        if x:  # as WeasyPrint's own drawing: an explicit position ends a dx/dy run
            svg.cursor_d_position[0] = 0
        if y:
            svg.cursor_d_position[1] = 0
        x = svg.cursor_position[0] if x is None else x
        y = svg.cursor_position[1] if y is None else y
        anchor = attrib.get(ANCHOR)
        if anchor in ("middle", "end"):
            x -= width / 2 if anchor == "middle" else width
        svg.cursor_position = x + width, y
        left, base = x + svg.cursor_d_position[0], y + svg.cursor_d_position[1]
        node.text_bounding_box = extend_bounding_box(
            node.text_bounding_box, ((left, base - baseline), (left + width, base - baseline + height)))
        svg.stream.push_state()
        fill, stroke = svg.set_graphical_state(node, font_size)
        svg.stream.begin_text()
        layout.reactivate(style)
        svg.fill_stroke(fill, stroke, text=True)
        box = text_module.TextBox(layout, style)
        box.baseline = baseline
        emojis = draw_first_line(svg.stream, box, "none", "none", Matrix(a=1, d=-1, e=left, f=base))
        svg.stream.end_text()
        svg.stream.pop_state()
        draw_emojis(svg.stream, style, x, y, emojis)

    for tag, draw in list(tags.items()):
        if draw is stock:
            tags[tag] = whole
    svg_package.text = whole  # draw_node tells text nodes by this name
    return True


def _style(style_type: Callable[[], dict], initial: dict, svg: Any, node: Any, font_size: float) -> dict:
    """The text style WeasyPrint's own drawing gives a plain text node: family, style, weight, size."""
    style = style_type()
    style.update(initial)
    style.font_config = svg.font_config  # type: ignore[attr-defined]
    style["font_family"] = [family.strip("\"'") for family in node.get("font-family", "sans-serif").split(",")]
    style["font_style"] = node.get("font-style", "normal")
    weight = node.get("font-weight", 400)
    if weight in ("normal", "bold"):
        style["font_weight"] = 400 if weight == "normal" else 700
    else:
        try:
            style["font_weight"] = int(weight)
        except ValueError:
            style["font_weight"] = 400
    style["font_size"] = font_size  # no direction: a text that sets one keeps WeasyPrint's drawing
    return style
