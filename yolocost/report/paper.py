"""The report's charts for paper: each plotly figure drawn again by matplotlib, as SVG.

The HTML report draws the plotly figures of charts.py in the browser. The PDF draws the same
figures, read from their plotly description (traces and layout, `fig.to_dict()`), with
matplotlib's SVG backend: no browser and no other program. One description feeds both, so
the data, titles, axis titles (units, currency), category order, colours and legend are the
same. Drawn here: bars (vertical or horizontal, stacked or side by side, a colour and an
outline per bar, labels outside), lines and markers (a second y axis, a gap where a value is
missing, hollow markers), category, date and log axes with the ticks the figure names, the
title and the legend. Hover text belongs to the browser and is left out. A crowded category
axis shows every k-th label, as plotly does; a value axis makes room for the labels written
past the bars, as plotly's does.

Each trace's bars are one artist, and the axes are placed from the measured sizes of the text
around them (`_arrange`), not by a layout engine: a month of 218 printed charts is drawn in
about a third of the time that one Rectangle per bar and matplotlib's constrained layout took
(`tests/report/test_report_paper.py` checks that every text stays inside its chart and apart).

Text stays text in the SVG (`svg.fonttype: none`), so a PDF's chart titles, labels and
Chinese names can be searched and copied. It is measured with the page's font families that
the machine has (the same list is written into the SVG, so WeasyPrint sets it in the font
matplotlib measured; DejaVu Sans, which matplotlib carries, ends the list). Labels reach
plotly HTML-escaped (`charts.esc`); they are unescaped here, and never read as mathtext.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import io
import logging
import math
from dataclasses import dataclass
from typing import Any, Sequence

from .charts import FONT, WIDTH

DPI = 100  # plotly's pixels become matplotlib's inches at this many per inch
PT = 72 / DPI  # points per plotly pixel (marker sizes, line widths)
TITLE_SIZE = 14
FONT_SIZE = 11
TICK_SIZE = 10
INK = "#1f2933"
GRID = "#e3e8ef"
AXIS_LINE = "#b8c0cc"
BAR_WIDTH = 0.8  # plotly's default bargap 0.2
LABEL_MAX = 48  # characters of a category label; a longer one ends in an ellipsis (tables hold it whole)
DAY_MS = 86_400_000
PAD = 6  # px of white around a chart
LABEL_GAP = 4  # points between a bar's end and its label
ROTATION = 30  # degrees of a category label turned to fit
TICK_PAD_PX = 3.5 * DPI / 72  # between a tick and its label (matplotlib's 3.5 points)


@functools.lru_cache(maxsize=1)
def font_families() -> tuple[str, ...]:
    """The page's chart fonts (charts.FONT) that this machine has, DejaVu Sans last."""
    from matplotlib import font_manager

    have = {f.name for f in font_manager.fontManager.ttflist}
    wanted = [name.strip().strip('"') for name in FONT.split(",")]
    found = [name for name in wanted if name in have and name != "DejaVu Sans"]
    return (*found, "DejaVu Sans")


@functools.lru_cache(maxsize=1)
def _rc() -> dict:
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    return {
        "svg.fonttype": "none",
        "svg.hashsalt": "yolocost",  # the same ids for the same chart: the SVG is reproducible
        "text.parse_math": False,
        "font.family": list(font_families()),
        "font.size": FONT_SIZE,
        "text.color": INK,
        "axes.labelcolor": INK,
        "axes.edgecolor": AXIS_LINE,
        "axes.titlesize": TITLE_SIZE,
        "xtick.color": INK,
        "ytick.color": INK,
        "xtick.labelsize": TICK_SIZE,
        "ytick.labelsize": TICK_SIZE,
        "legend.fontsize": TICK_SIZE,
        "legend.frameon": False,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "hatch.linewidth": 0.5,
    }


def text(value: Any) -> str:
    """A label as plotly showed it: unescaped, `<br>` as a new line."""
    if value is None:
        return ""
    return html.unescape(str(value).replace("<br>", "\n"))


@functools.lru_cache(maxsize=4096)
def text_width(text: str, size: float) -> float:
    """The text's width in points at `size` points, measured in the chart fonts (inside
    `_rc()`'s settings: the same fonts and fallbacks the SVG is drawn with)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    return TextToPath().get_text_width_height_descent(text, FontProperties(size=size), ismath=False)[0]


def wrapped(text: str, width_pt: float, size: float) -> str:
    """The text broken at spaces into lines at most `width_pt` wide (a longer word keeps a
    line of its own; a line break the text has stays): a chart's title stays inside it."""
    lines: list[str] = []
    space = text_width("a a", size) - text_width("aa", size)
    for given in text.split("\n"):
        if text_width(given, size) <= width_pt:
            lines.append(given)
            continue
        start, used = len(lines), 0.0
        for word in given.split():
            wide = text_width(word, size)
            if len(lines) > start and used + space + wide <= width_pt:
                lines[-1] += " " + word
                used += space + wide
            else:
                lines.append(word)
                used = wide
    return "\n".join(lines)


def _short(label: str, limit: int = LABEL_MAX) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _title(layout: dict) -> str:
    title = layout.get("title") or {}
    return text(title.get("text") if isinstance(title, dict) else title)


def _axis_title(axis: dict) -> str:
    title = axis.get("title") or {}
    return text(title.get("text") if isinstance(title, dict) else title)


def _per_point(value, n: int, default=None) -> list:
    """A marker property as one value per point (plotly takes a scalar or an array)."""
    if isinstance(value, (list, tuple)):
        return [default if v is None else v for v in value][:n] + [default] * max(0, n - len(value))
    return [default if value is None else value] * n


def _first(value, default=None):
    if isinstance(value, (list, tuple)):
        return next((v for v in value if v is not None), default)
    return default if value is None else value


def _num(value) -> float:
    return math.nan if value is None else float(value)


def _date(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).replace(tzinfo=None)


class _Numbers:
    """Tick labels with thousands separators and as many decimals as the step needs (on a
    log scale: as each value needs, 0.01, 1, 1,000)."""

    def __init__(self, log: bool = False) -> None:
        from matplotlib import ticker

        class Formatter(ticker.Formatter):
            ticks: list[float] = []

            def set_locs(self, locs):
                self.ticks = list(locs)

            def __call__(self, x, pos=None):
                if log:
                    places = max(0, min(6, -math.floor(math.log10(x) + 1e-9))) if x > 0 else 0
                else:
                    locs = [v for v in self.ticks if math.isfinite(v)]
                    steps = [abs(b - a) for a, b in zip(locs, locs[1:]) if b != a]
                    step = min(steps) if steps else 1.0
                    places = 0 if step >= 1 else min(6, -math.floor(math.log10(step) + 1e-9))
                shown = f"{x:,.{places}f}"
                return "0" if shown.strip("-0.,") == "" else shown

        self.formatter = Formatter()


class _Categories:
    """Category positions of an axis: the array the figure names first, then each new value in
    the order the traces bring them (plotly's default)."""

    def __init__(self, axis: dict):
        self.order: list[str] = []
        self.places: dict[str, int] = {}
        if axis.get("categoryorder") == "array":
            for c in axis.get("categoryarray") or ():
                self.add(c)

    def add(self, value) -> int:
        """The value's position, a new one at the end."""
        label = text(value)
        if label not in self.places:
            self.places[label] = len(self.order)
            self.order.append(label)
        return self.places[label]


def draw(spec: dict, width: int = WIDTH):
    """A matplotlib Figure of the plotly figure description (`fig.to_dict()`)."""
    from matplotlib.figure import Figure

    layout = spec.get("layout") or {}
    traces = [t for t in spec.get("data") or () if t.get("visible", True) is not False]
    height = int(layout.get("height") or 360)
    fig = Figure(figsize=(width / DPI, height / DPI), dpi=DPI)  # no layout engine: `_arrange` places the axes
    ax = fig.add_subplot()
    xaxis, yaxis = layout.get("xaxis") or {}, layout.get("yaxis") or {}
    bars = [t for t in traces if t.get("type") == "bar"]
    horizontal = bool(bars) and all(t.get("orientation") == "h" for t in bars)
    cat_axis, value_axis = (yaxis, xaxis) if horizontal else (xaxis, yaxis)
    kind = _kind(cat_axis, [v for t in traces for v in (t.get("y") if horizontal else t.get("x")) or ()])
    categories = _Categories(cat_axis)
    if kind == "category":  # every trace's categories, in order, before any bar is placed
        for t in traces:
            for v in (t.get("y") if horizontal else t.get("x")) or ():
                categories.add(v)

    def where(v) -> float:
        if kind == "date":
            from matplotlib.dates import date2num

            return float(date2num(_date(v)))
        return float(categories.add(v)) if kind == "category" else _num(v)

    outside = _bars(ax, bars, layout, horizontal, kind == "date", where)
    twin = None
    for t in traces:
        if t.get("type") != "scatter":
            continue
        target = ax
        if t.get("yaxis") == "y2":
            twin = twin or ax.twinx()
            target = twin
        _scatter(target, t, where)

    if kind == "number":  # points over two numeric axes (a scatter chart)
        _value_axis(ax, cat_axis, "x")
    else:
        _category_axis(ax, cat_axis, categories, horizontal, kind == "date")
    _value_axis(ax, value_axis, "x" if horizontal else "y")
    if twin is not None:
        _second_axis(twin, layout.get("yaxis2") or {})
    legend, below = _legend(fig, traces, layout)
    title = _title(layout)
    if title:
        title = wrapped(title, (width - 2 * PAD) / DPI * 72, TITLE_SIZE)
        fig.suptitle(title, x=PAD / width, y=1 - PAD / height, ha="left", va="top", fontsize=TITLE_SIZE, color=INK)
    _arrange(fig, ax, twin, _Frame(title, legend, below, outside, horizontal, kind))
    return fig


@dataclass(frozen=True)
class _Frame:
    """What stands around a chart's axes: the title's text, the legend, the labels written
    past the bars' ends, which axis holds the categories and how it places them."""

    title: str
    legend: Any  # a matplotlib Legend, or None
    legend_below: bool
    outside: list[tuple[float, float, str]]  # (the bar's place on the category axis, its end, the label)
    horizontal: bool
    kind: str


def _px(points: float) -> float:
    return points * DPI / 72


@functools.lru_cache(maxsize=64)
def _lines_px(size: float, lines: int) -> float:
    """The height (px) matplotlib gives `lines` lines of text at `size` points."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.figure import Figure

    sample = Figure(dpi=DPI).text(0, 0, "\n".join(["Ag"] * lines), fontsize=size)
    return sample.get_window_extent(RendererAgg(100, 100, DPI)).height


def _block_px(label: str, size: float) -> float:
    """The height (px) of a text block, nothing when it is empty."""
    return _lines_px(size, label.count("\n") + 1) if label else 0.0


def _tick_labels(axis) -> list[str]:
    """The labels the axis will show at its present size and limits (the locator's ticks
    inside the view, written by the axis's formatter): measured without drawing them."""
    low, high = sorted(axis.get_view_interval())
    locs = [v for v in axis.get_majorticklocs() if low - 1e-9 * abs(high - low) <= v <= high + 1e-9 * abs(high - low)]
    return [str(t) for t in axis.get_major_formatter().format_ticks(locs)]


def _widest(labels: Sequence[str]) -> float:
    """The widest label (px) at the tick size; each line measured once per process."""
    return max((_px(text_width(line, TICK_SIZE)) for label in labels for line in label.split("\n")), default=0.0)


def _arrange(fig, ax, twin, frame: _Frame) -> None:
    """Place the axes so that the title, tick labels, axis titles and legend fit around them,
    from the text's measured sizes: each text is measured once, where a layout engine
    measures every label again on each of its passes (that was half a chart's drawing time).
    A label written past a bar's end gets room from a longer value axis, as plotly gives it."""
    width, height = fig.get_figwidth() * DPI, fig.get_figheight() * DPI
    tick_h = _lines_px(TICK_SIZE, 1)
    legend_w = legend_h = 0.0
    if frame.legend is not None:
        from matplotlib.backends.backend_agg import RendererAgg

        box = frame.legend.get_window_extent(RendererAgg(int(width), int(height), DPI))
        pad = 2 * _px(frame.legend.borderaxespad * TICK_SIZE)  # its own padding on either side
        legend_h, legend_w = (box.height + pad, 0.0) if frame.legend_below else (0.0, box.width + pad)
    # the title, and half a tick label: the top one stands half above the axes
    top = PAD + (_block_px(frame.title, TITLE_SIZE) + PAD if frame.title else 0.0) + tick_h / 2
    bottom = PAD + legend_h + _axis_title_px(ax.get_xlabel())
    left = PAD + _axis_title_px(ax.get_ylabel())
    right = PAD + legend_w + (_axis_title_px(twin.get_ylabel()) if twin is not None else 0.0)

    def place() -> None:
        box = [left / width, bottom / height, max(width - left - right, 10) / width, max(height - top - bottom, 10) / height]
        for axes in (ax, twin):
            if axes is not None:
                axes.set_position(box)

    place()
    named = not frame.horizontal and frame.kind != "number"  # the x axis holds categories or days
    full = _category_ticks(ax, frame)
    _thin(ax, frame, full)
    x_labels = [t.get_text() for t in ax.get_xticklabels()] if named else _tick_labels(ax.xaxis)
    turned = named and bool(x_labels) and bool(ax.get_xticklabels()[0].get_rotation())
    sin, cos = math.sin(math.radians(ROTATION)), math.cos(math.radians(ROTATION))
    if turned:  # the label standing lowest decides the height
        bottom += max(_widest([label]) * sin + _lines(label) * tick_h * cos for label in x_labels)
    elif x_labels:
        bottom += tick_h * max(_lines(label) for label in x_labels)
    bottom += TICK_PAD_PX + _tick_len_px(ax.xaxis)
    place()
    _room_for_outside_labels(ax, frame)
    # the y axes' tick labels, now that the axes' height (and so their ticks) is known
    def y_widths() -> tuple[float, float]:
        mine = [t.get_text() for t in ax.get_yticklabels()] if frame.horizontal else _tick_labels(ax.yaxis)
        return _widest(mine), (_widest(_tick_labels(twin.yaxis)) if twin is not None else 0.0)

    y_width, twin_width = y_widths()
    left += y_width + TICK_PAD_PX + _tick_len_px(ax.yaxis)
    if twin is not None:
        right += twin_width + TICK_PAD_PX + _tick_len_px(twin.yaxis)
    # a category stands 0.6 of a step inside the axes' left end and 0.4 inside its right one
    step = (width - left - right) / (ax.get_xlim()[1] - ax.get_xlim()[0]) if frame.kind == "category" and named else 0.0
    if turned:  # a turned label reaches left past its tick: the one reaching furthest decides
        at = [round(t.get_position()[0]) for t in ax.get_xticklabels()]
        left = max(left, PAD + max(_widest([label]) * cos + _lines(label) * tick_h * sin - (0.6 + i) * step
                                   for i, label in zip(at, x_labels)))
    else:  # the end labels of the x axis may stand half outside it
        if not named:  # a number axis's ticks, now that its width is known
            x_labels = _tick_labels(ax.xaxis)
        right = max(right, PAD + _widest(x_labels[-1:]) / 2 - 0.4 * step)
        left = max(left, PAD + _widest(x_labels[:1]) / 2 - 0.6 * step)
    if not frame.horizontal and frame.outside:  # a label above a bar near an end may be wider than its room
        x0, x1 = ax.get_xlim()
        for position, _, label in frame.outside:
            share = (position - x0) / (x1 - x0)  # of the axes' width, from the left
            half = 1.04 * _widest([label]) / 2 + 1
            at = left + share * (width - left - right)
            if at + half > width - PAD and share > 0:  # a wider right margin moves the label left by `share` of it
                right += (at + half - width + PAD) / share
            if at - half < PAD and share < 1:
                left += (PAD - at + half) / (1 - share)
    place()
    _thin(ax, frame, full)  # at the final size: only ever fewer labels than above
    _room_for_outside_labels(ax, frame)
    wider, twin_wider = (now - then for now, then in zip(y_widths(), (y_width, twin_width)))
    if wider > 0 or twin_wider > 0:  # the lengthened value axis has wider tick labels
        left, right = left + max(wider, 0.0), right + max(twin_wider, 0.0)
        place()
        _room_for_outside_labels(ax, frame)
    if frame.legend is not None:
        anchor = (PAD / width, PAD / height) if legend_h else (1 - PAD / width, 1 - top / height)
        frame.legend.set_bbox_to_anchor(anchor, transform=fig.transFigure)


def _axis_title_px(title: str) -> float:
    """The room (px) an axis title takes beside its tick labels."""
    return _block_px(title, FONT_SIZE) + _px(4) if title else 0.0  # matplotlib's label pad: 4 points


def _tick_len_px(axis) -> float:
    """The length (px) of the axis's ticks; a second y axis draws its own on the right."""
    ticks = axis.get_major_ticks()[:1]
    if not ticks:
        return 0.0
    drawn = [line for line in (ticks[0].tick1line, ticks[0].tick2line) if line.get_visible()]
    return _px(drawn[0].get_markersize()) if drawn else 0.0


def _lines(label: str) -> int:
    return label.count("\n") + 1


def _category_ticks(ax, frame: _Frame) -> list[tuple[float, str]]:
    """Every category's position and label (`_category_axis` names them all; `_thin` shows
    some), or nothing for an axis of numbers or days."""
    if frame.kind != "category":
        return []
    axis = ax.yaxis if frame.horizontal else ax.xaxis
    return [(float(at), t.get_text()) for at, t in zip(axis.get_majorticklocs(), axis.get_majorticklabels())]


def _thin(ax, frame: _Frame, full: list[tuple[float, str]]) -> None:
    """Show every k-th category label, so that none overlap at the axes' present size: plotly
    thins a crowded category axis alike. Labels side by side need their lines' height across
    them (`label_pitch_px`; turned ones: over the sine of the angle); upright ones side by
    side were found to fit."""
    if not full:
        return
    pitch = label_pitch_px(max(_lines(label) for _, label in full))
    if frame.horizontal:
        every = label_step(len(full), ax.bbox.height, pitch)
        shown = full[::every]
        ax.set_yticks([at for at, _ in shown], [label for _, label in shown])
        return
    turned = bool(ax.xaxis.get_majorticklabels()[0].get_rotation())
    if not turned:
        return
    every = label_step(len(full), ax.bbox.width, pitch / math.sin(math.radians(ROTATION)))
    shown = full[::every]
    ax.set_xticks([at for at, _ in shown], [label for _, label in shown])
    _turn(ax)


def _room_for_outside_labels(ax, frame: _Frame) -> None:
    """A value axis long enough that the labels written past the bars' ends stay inside it:
    past the top (right) end for a positive bar, the bottom (left) one for a negative one, on
    a linear or a log scale."""
    if not frame.outside:
        return
    box = ax.get_window_extent()
    length = box.width if frame.horizontal else box.height
    log = (ax.get_xscale() if frame.horizontal else ax.get_yscale()) == "log"
    low, high = ax.get_xlim() if frame.horizontal else ax.get_ylim()
    if log and (low <= 0 or high <= 0):
        return
    scale, unscale = (math.log10, lambda v: 10 ** v) if log else ((lambda v: v), (lambda v: v))
    low, high = scale(low), scale(high)
    if high <= low or length <= 0:
        return
    # with a little to spare: a renderer that hints the glyphs sets the text up to 3 % wider
    wanted = [(scale(end), end >= 0, _px(LABEL_GAP) + 2 + 1.04 * (_widest([label]) if frame.horizontal
                                                                   else _block_px(label, TICK_SIZE)))
              for _, end, label in frame.outside if not (log and end <= 0)]
    wanted = [(at, up, extent) for at, up, extent in wanted if extent < length]
    need_low, need_high = low, high
    for _ in range(8):  # lengthening one end moves the labels at the other: again until none moves
        before = (need_low, need_high)
        for at, up, extent in wanted:
            if up and at > need_low:
                need_high = max(need_high, need_low + (at - need_low) * length / (length - extent))
            elif not up and at < need_high:
                need_low = min(need_low, need_high - (need_high - at) * length / (length - extent))
        if (need_low, need_high) == before:
            break
    if (need_low, need_high) != (low, high):
        (ax.set_xlim if frame.horizontal else ax.set_ylim)(unscale(need_low), unscale(need_high))


def _bars(ax, bars: list[dict], layout: dict, horizontal: bool, dates: bool, where) -> list[tuple[float, float, str]]:
    """The bar traces drawn; returns each label written outside a bar as (the bar's place,
    where it ends, the label), for `_arrange` to make room for it."""
    outside_labels: list[tuple[float, float, str]] = []
    stacked = layout.get("barmode") == "stack"
    gap = layout.get("bargap")
    full = 1 - gap if gap is not None else BAR_WIDTH
    slots = _slots(bars, horizontal) if not stacked else {}
    ups: dict[float, float] = {}
    downs: dict[float, float] = {}
    for i, t in enumerate(bars):
        cats = list((t.get("y") if horizontal else t.get("x")) or ())
        values = list((t.get("x") if horizontal else t.get("y")) or ())
        n = min(len(cats), len(values))
        marker = t.get("marker") or {}
        line = marker.get("line") or {}
        colors = _per_point(marker.get("color"), n, "#3b6ea5")
        edges = _per_point(line.get("color"), n, "none")
        edge_widths = _per_point(line.get("width"), n, 0)
        if dates:  # the bar's width in days (plotly's in milliseconds)
            size = float(_first(t.get("width"), DAY_MS * BAR_WIDTH)) / DAY_MS
        else:
            size = full / slots.get("count", 1) if slots else full
        offset = (slots["index"][i] - (slots["count"] - 1) / 2) * size if slots else 0.0
        labels = _per_point(t.get("text"), n, "")
        outside = t.get("textposition") == "outside"
        drawn = [k for k in range(n) if values[k] is not None]
        at = [where(cats[k]) + offset for k in drawn]
        lengths = [float(values[k]) for k in drawn]
        bases = []
        for position, v in zip(at, lengths):
            base = 0.0
            if stacked:
                pile = ups if v >= 0 else downs
                base = pile.get(position, 0.0)
                pile[position] = base + v
            bases.append(base)
        if not drawn:
            continue
        half = size / 2
        corners = [((p - half, b), (p - half, b + v), (p + half, b + v), (p + half, b)) for p, v, b in zip(at, lengths, bases)]
        # (position, value) corners; a horizontal bar has them the other way round
        boxes = [[(y, x) if horizontal else (x, y) for x, y in box] for box in corners]
        ax.add_collection(_bar_collection(boxes, [colors[k] for k in drawn], [edges[k] or "none" for k in drawn],
                                          [(edge_widths[k] or 0) * PT for k in drawn], horizontal), autolim=True)
        ax.autoscale_view()
        for k, position, v, base in zip(drawn, at, lengths, bases):
            if outside and labels[k]:  # past the bar's end: beyond its top, or its bottom when negative
                end = base + v
                gap = LABEL_GAP if v >= 0 else -LABEL_GAP
                ax.annotate(text(labels[k]), (end, position) if horizontal else (position, end),
                            xytext=(gap, 0) if horizontal else (0, gap), textcoords="offset points",
                            ha=("left" if v >= 0 else "right") if horizontal else "center",
                            va="center" if horizontal else ("bottom" if v >= 0 else "top"),
                            fontsize=TICK_SIZE, color=INK, annotation_clip=False)
                outside_labels.append((position, end, text(labels[k])))
    return outside_labels


def _bar_collection(boxes: list, faces: list, edges: list, widths: list, horizontal: bool):
    """One trace's bars as a single artist (a PolyCollection: one box per bar). Axes.bar makes
    one Rectangle per bar, each updating the data limits and drawn on its own: for a month of
    daily bars in 22 colours that was most of a chart's drawing time."""
    from matplotlib.collections import PolyCollection

    bars = PolyCollection(boxes, closed=True, facecolors=faces, edgecolors=edges, linewidths=widths,
                          label="_bars")
    (bars.sticky_edges.x if horizontal else bars.sticky_edges.y).append(0.0)  # the value axis starts at zero, as plotly's
    return bars


def _slots(bars: list[dict], horizontal: bool) -> dict:
    """Side-by-side slots for bar traces that share a category (plotly's barmode "group");
    traces on categories of their own keep the whole width."""
    seen: dict[str, int] = {}
    shared = False
    for t in bars:
        for c in set(map(str, (t.get("y") if horizontal else t.get("x")) or ())):
            seen[c] = seen.get(c, 0) + 1
            shared = shared or seen[c] > 1
    if not shared or len(bars) < 2:
        return {}
    return {"count": len(bars), "index": list(range(len(bars)))}


def _scatter(ax, t: dict, where) -> None:
    xs = [where(x) for x in t.get("x") or ()]
    ys = [_num(y) for y in t.get("y") or ()][: len(xs)]
    xs = xs[: len(ys)]
    mode = t.get("mode") or "lines+markers"
    marker = t.get("marker") or {}
    line = t.get("line") or {}
    color = _first(marker.get("color")) or line.get("color") or "#3b6ea5"
    edge = (marker.get("line") or {}).get("color") or color
    edge_width = ((marker.get("line") or {}).get("width") or 0) * PT
    if "lines" in mode:
        ax.plot(xs, ys, color=line.get("color") or color, linewidth=(line.get("width") or 2) * PT, zorder=3)
    if "markers" in mode:
        sizes = _per_point(marker.get("size"), len(xs), 6)
        ax.scatter(xs, ys, s=[(s * PT) ** 2 for s in sizes], color=color,
                   edgecolors=edge, linewidths=edge_width or 0.5 * PT, zorder=4)


def _category_axis(ax, axis: dict, categories: _Categories, horizontal: bool, dates: bool) -> None:
    title = _axis_title(axis)
    if dates:
        _date_axis(ax, axis)
    else:
        count = len(categories.order)
        labels = [_short(c) for c in categories.order]
        if horizontal:  # every label named here; `_arrange` shows as many as fit (`_thin`)
            ax.set_yticks(range(count), labels)
            ax.set_ylim(-0.6, count - 0.4)
            if axis.get("autorange") == "reversed":
                ax.invert_yaxis()
        else:
            ax.set_xticks(range(count), labels)
            ax.set_xlim(-0.6, count - 0.4)
            room = ax.figure.get_figwidth() * DPI - 120  # px for the labels side by side
            if sum(len(c) + 2 for c in labels) * TICK_SIZE * 0.6 > room:
                _turn(ax)
    (ax.set_ylabel if horizontal else ax.set_xlabel)(title)
    ax.tick_params(axis="y" if horizontal else "x", length=0 if not dates else 4)


def _turn(ax) -> None:
    """The x axis's labels turned by ROTATION degrees, each ending at its tick."""
    ax.tick_params(axis="x", labelrotation=ROTATION)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
        label.set_rotation_mode("anchor")


def label_pitch_px(lines: int = 1) -> float:
    """How far apart (px, across them) labels of `lines` lines stand at the least: 1.2 em a
    line, plotly's rule for a category axis (a line's box, ascent to descent, is 1.36 em in
    Noto Sans; its letters fill less)."""
    return lines * 1.2 * _px(TICK_SIZE)


def label_step(count: int, room_px: float, pitch_px: float) -> int:
    """Every how many categories a label is shown so that the labels do not overlap: plotly
    thins a crowded category axis the same way (each label needs at least `pitch_px`); a bar
    without a label is named in the report's table."""
    fits = max(1, int(room_px // pitch_px))
    return max(1, math.ceil(count / fits))


def _date_axis(ax, axis: dict) -> None:
    """A date axis as the figure names it: its range, a first tick and a step (ms), the format."""
    from matplotlib.dates import date2num

    span = axis.get("range")
    if span:
        ax.set_xlim(date2num(_date(span[0])), date2num(_date(span[1])))
    step = axis.get("dtick")
    first = axis.get("tick0")
    if step and first and span:
        tick, end, every = _date(first), _date(span[1]), dt.timedelta(milliseconds=float(step))
        ticks = []
        while tick <= end:
            ticks.append(tick)
            tick += every
        fmt = axis.get("tickformat") or "%Y-%m-%d"
        ax.set_xticks([date2num(t) for t in ticks], [t.strftime(fmt) for t in ticks])


def _kind(axis: dict, values: list) -> str:
    """How an axis places its values: "date", "category" or "number" (plotly's own guess:
    strings are categories)."""
    named = axis.get("type")
    if named in ("date", "category"):
        return named
    if named in ("log", "linear"):
        return "number"
    return "category" if any(isinstance(v, str) for v in values) else "number"


def _value_axis(ax, axis: dict, which: str) -> None:
    horizontal = which == "x"
    target = ax.xaxis if horizontal else ax.yaxis
    set_label = ax.set_xlabel if horizontal else ax.set_ylabel
    set_label(_axis_title(axis))
    if axis.get("type") == "log":
        (ax.set_xscale if horizontal else ax.set_yscale)("log")
        span = axis.get("range")
        if span:
            (ax.set_xlim if horizontal else ax.set_ylim)(10 ** span[0], 10 ** span[1])
        target.set_minor_locator(_null_locator())
        if axis.get("tickvals"):
            labels = [text(t) for t in axis.get("ticktext") or axis["tickvals"]]
            (ax.set_xticks if horizontal else ax.set_yticks)(list(axis["tickvals"]), labels)
        else:  # plain numbers (matplotlib's own log labels are mathtext, which is off)
            target.set_major_formatter(_Numbers(log=True).formatter)
    else:
        target.set_major_formatter(_Numbers().formatter)
        low, high = (ax.get_xlim() if horizontal else ax.get_ylim())
        if axis.get("rangemode") == "tozero" and low > 0:
            (ax.set_xlim if horizontal else ax.set_ylim)(0.0, high)
    ax.grid(True, axis=which, color=GRID, linewidth=0.8)
    ax.set_axisbelow(True)


def _second_axis(twin, axis: dict) -> None:
    twin.set_ylabel(_axis_title(axis))
    twin.yaxis.set_major_formatter(_Numbers().formatter)
    twin.spines["right"].set_visible(True)
    if axis.get("rangemode") == "tozero":
        twin.set_ylim(0, max(twin.get_ylim()[1], 1e-9))


def _null_locator():
    from matplotlib import ticker

    return ticker.NullLocator()


def _legend(fig, traces: Sequence[dict], layout: dict):
    """Plotly's legend: one entry per named trace, shown when there are two or more (or the
    layout asks), below the chart when horizontal, on the right when vertical. Returns the
    legend (None without one) and whether it goes below; `_arrange` puts it in place."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    entries = [t for t in traces if t.get("showlegend", True) is not False and t.get("name") is not None]
    show = layout.get("showlegend")
    if show is False or not entries or (show is None and len(entries) < 2):
        return None, False
    handles: list[Patch | Line2D] = []
    for t in entries:
        marker = t.get("marker") or {}
        if t.get("type") == "bar":
            color = _first(marker.get("color"), "#3b6ea5")
            handles.append(Patch(facecolor=color, edgecolor=_first((marker.get("line") or {}).get("color"), color)))
        else:
            mode = t.get("mode") or "lines+markers"
            color = _first(marker.get("color")) or (t.get("line") or {}).get("color") or "#3b6ea5"
            edge = (marker.get("line") or {}).get("color") or color
            handles.append(Line2D([], [], color=(t.get("line") or {}).get("color") or color,
                                  linestyle="-" if "lines" in mode else "none",
                                  marker="o" if "markers" in mode else None,
                                  markerfacecolor=color, markeredgecolor=edge))
    names = [text(t.get("name")) for t in entries]
    legend = layout.get("legend") or {}
    if legend.get("orientation") == "v":
        return fig.legend(handles, names, loc="upper right"), False
    longest = max(len(n) for n in names)
    per_row = max(1, min(len(names), int(fig.get_figwidth() * DPI // (longest * 7 + 40))))
    return fig.legend(handles, names, loc="lower left", ncols=per_row), True


def svg(spec: dict, width: int = WIDTH) -> str:
    """The figure description (`fig.to_dict()`) drawn as SVG text: text as text, no raster."""
    import matplotlib

    with matplotlib.rc_context(_rc()):
        fig = draw(spec, width)
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    return out.getvalue()


def description(fig) -> dict:
    """A plotly figure as the plain description `svg` draws (traces and layout, no template):
    small and picklable, for a worker process."""
    spec = fig.to_dict()
    spec.get("layout", {}).pop("template", None)
    return spec
