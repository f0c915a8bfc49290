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
around them (`placement.arrange`), not by a layout engine: a month of 218 printed charts is drawn in
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
from typing import Any, Sequence

from .charts import FONT, WIDTH
from .placement import DPI, FONT_SIZE, LABEL_GAP, PAD, TICK_SIZE, TITLE_SIZE, Frame, arrange, text_width, turn

PT = 72 / DPI  # points per plotly pixel (marker sizes, line widths)
INK = "#1f2933"
GRID = "#e3e8ef"
AXIS_LINE = "#b8c0cc"
BAR_WIDTH = 0.8  # plotly's default bargap 0.2
LABEL_MAX = 48  # characters of a category label; a longer one ends in an ellipsis (tables hold it whole)
DAY_MS = 86_400_000


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
    fig = Figure(figsize=(width / DPI, height / DPI), dpi=DPI)  # no layout engine: `arrange` places the axes
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
    arrange(fig, ax, twin, Frame(title, legend, below, outside, horizontal, kind))
    return fig


def _bars(ax, bars: list[dict], layout: dict, horizontal: bool, dates: bool, where) -> list[tuple[float, float, str]]:
    """The bar traces drawn; returns each label written outside a bar as (the bar's place,
    where it ends, the label), for `arrange` to make room for it."""
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
        if horizontal:  # every label named here; `placement.arrange` shows as many as fit
            ax.set_yticks(range(count), labels)
            ax.set_ylim(-0.6, count - 0.4)
            if axis.get("autorange") == "reversed":
                ax.invert_yaxis()
        else:
            ax.set_xticks(range(count), labels)
            ax.set_xlim(-0.6, count - 0.4)
            room = ax.figure.get_figwidth() * DPI - 120  # px for the labels side by side
            if sum(len(c) + 2 for c in labels) * TICK_SIZE * 0.6 > room:
                turn(ax)
    (ax.set_ylabel if horizontal else ax.set_xlabel)(title)
    ax.tick_params(axis="y" if horizontal else "x", length=0 if not dates else 4)


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
    legend (None without one) and whether it goes below; `arrange` puts it in place."""
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
