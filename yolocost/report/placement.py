"""Where a printed chart's axes go: margins from the measured size of the text around them.

`paper.py` draws a plotly figure with matplotlib; this module places its axes so that the
title, tick labels, axis titles, bar labels and legend fit around them, with no layout
engine: each text is measured once (`text_width`, cached a process), where matplotlib's
constrained layout measured every label again on each of its two passes (half a chart's
drawing time). It also thins a crowded category axis as plotly does (`label_step`) and
lengthens a value axis so that labels written past the bars stay inside it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Sequence

DPI = 100  # plotly's pixels become matplotlib's inches at this many per inch
TITLE_SIZE = 14
FONT_SIZE = 11
TICK_SIZE = 10
PAD = 6  # px of white around a chart
LABEL_GAP = 4  # points between a bar's end and its label
ROTATION = 30  # degrees of a category label turned to fit
TICK_PAD_PX = 3.5 * DPI / 72  # between a tick and its label (matplotlib's 3.5 points)


@functools.lru_cache(maxsize=4096)
def text_width(text: str, size: float) -> float:
    """The text's width in points at `size` points, measured in the chart fonts (inside
    `_rc()`'s settings: the same fonts and fallbacks the SVG is drawn with)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    return TextToPath().get_text_width_height_descent(text, FontProperties(size=size), ismath=False)[0]


@dataclass(frozen=True)
class Frame:
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
def lines_px(size: float, lines: int) -> float:
    """The height (px) matplotlib gives `lines` lines of text at `size` points."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.figure import Figure

    sample = Figure(dpi=DPI).text(0, 0, "\n".join(["Ag"] * lines), fontsize=size)
    return sample.get_window_extent(RendererAgg(100, 100, DPI)).height


def _block_px(label: str, size: float) -> float:
    """The height (px) of a text block, nothing when it is empty."""
    return lines_px(size, _lines(label)) if label else 0.0


def _tick_labels(axis) -> list[str]:
    """The labels the axis will show at its present size and limits (the locator's ticks
    inside the view, written by the axis's formatter): measured without drawing them."""
    low, high = sorted(axis.get_view_interval())
    locs = [v for v in axis.get_majorticklocs() if low - 1e-9 * abs(high - low) <= v <= high + 1e-9 * abs(high - low)]
    return [str(t) for t in axis.get_major_formatter().format_ticks(locs)]


def widest(labels: Sequence[str]) -> float:
    """The widest label (px) at the tick size; each line measured once per process."""
    return max((_px(text_width(line, TICK_SIZE)) for label in labels for line in label.split("\n")), default=0.0)


def arrange(fig, ax, twin, frame: Frame) -> None:
    """Place the axes so that the title, tick labels, axis titles and legend fit around them,
    from the text's measured sizes: each text is measured once, where a layout engine
    measures every label again on each of its passes (that was half a chart's drawing time).
    A label written past a bar's end gets room from a longer value axis, as plotly gives it."""
    width, height = fig.get_figwidth() * DPI, fig.get_figheight() * DPI
    tick_h = lines_px(TICK_SIZE, 1)
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
    turned = named and bool(x_labels) and _turned(ax)
    sin, cos = math.sin(math.radians(ROTATION)), math.cos(math.radians(ROTATION))
    if turned:  # the label standing lowest decides the height
        bottom += max(widest([label]) * sin + _lines(label) * tick_h * cos for label in x_labels)
    elif x_labels:
        bottom += tick_h * max(_lines(label) for label in x_labels)
    bottom += TICK_PAD_PX + _tick_len_px(ax.xaxis)
    place()
    _room_for_outside_labels(ax, frame)
    # the y axes' tick labels, now that the axes' height (and so their ticks) is known
    def y_widths() -> tuple[float, float]:
        mine = [t.get_text() for t in ax.get_yticklabels()] if frame.horizontal else _tick_labels(ax.yaxis)
        return widest(mine), (widest(_tick_labels(twin.yaxis)) if twin is not None else 0.0)

    y_width, twin_width = y_widths()
    left += y_width + TICK_PAD_PX + _tick_len_px(ax.yaxis)
    if twin is not None:
        right += twin_width + TICK_PAD_PX + _tick_len_px(twin.yaxis)
    # a category stands 0.6 of a step inside the axes' left end and 0.4 inside its right one
    step = (width - left - right) / (ax.get_xlim()[1] - ax.get_xlim()[0]) if frame.kind == "category" and named else 0.0
    if turned:  # a turned label reaches left past its tick: the one reaching furthest decides
        at = [round(t.get_position()[0]) for t in ax.get_xticklabels()]
        left = max(left, PAD + max(widest([label]) * cos + _lines(label) * tick_h * sin - (0.6 + i) * step
                                   for i, label in zip(at, x_labels)))
    else:  # the end labels of the x axis may stand half outside it
        if not named:  # a number axis's ticks, now that its width is known
            x_labels = _tick_labels(ax.xaxis)
        right = max(right, PAD + widest(x_labels[-1:]) / 2 - 0.4 * step)
        left = max(left, PAD + widest(x_labels[:1]) / 2 - 0.6 * step)
    if not frame.horizontal and frame.outside:  # a label above a bar near an end may be wider than its room
        x0, x1 = ax.get_xlim()
        for position, _, label in frame.outside:
            share = (position - x0) / (x1 - x0)  # of the axes' width, from the left
            half = _spared(widest([label])) / 2
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


def _turned(ax) -> bool:
    """Whether the x axis's labels are turned (`turn`)."""
    labels = ax.xaxis.get_majorticklabels()
    return bool(labels) and bool(labels[0].get_rotation())


def _spared(px: float) -> float:
    """The room (px) to leave for a label written past a bar's end that measures `px`, with
    a little to spare: a renderer that hints the glyphs sets the text up to 3 % wider."""
    return 1.04 * px + 2


def _category_ticks(ax, frame: Frame) -> list[tuple[float, str]]:
    """Every category's position and label (`_category_axis` names them all; `_thin` shows
    some), or nothing for an axis of numbers or days."""
    if frame.kind != "category":
        return []
    axis = ax.yaxis if frame.horizontal else ax.xaxis
    return [(float(at), t.get_text()) for at, t in zip(axis.get_majorticklocs(), axis.get_majorticklabels())]


def _thin(ax, frame: Frame, full: list[tuple[float, str]]) -> None:
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
    if not _turned(ax):
        return
    every = label_step(len(full), ax.bbox.width, pitch / math.sin(math.radians(ROTATION)))
    shown = full[::every]
    ax.set_xticks([at for at, _ in shown], [label for _, label in shown])
    turn(ax)


def _room_for_outside_labels(ax, frame: Frame) -> None:
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
    wanted = [(scale(end), end >= 0, _px(LABEL_GAP) + _spared(widest([label]) if frame.horizontal
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


def turn(ax) -> None:
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
