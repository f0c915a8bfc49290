"""The PDF's charts drawn by matplotlib from the plotly figures: every bar, point, title, axis
title and legend entry of the sample month's figures is checked against the plotly figure
the HTML report draws, and labels come through as written (CJK, `<script>`, `$`)."""

from __future__ import annotations

import datetime as dt
import html
import math
import re

import duckdb
import matplotlib
import plotly.graph_objects as go
import pytest
from helpers.reportkit import MONTH

from yolocost.report import charts, paper, placement, sections


@pytest.fixture(scope="module")
def figures(sample_db):
    """Every figure of the admin report and of the CJK project's report (name: plotly figure)."""
    config = sample_db.config
    con = duckdb.connect(str(sample_db.path), read_only=True)
    try:
        found = {}
        for project in (None, "视觉质检"):
            report = sections.collect(con, MONTH, project, timezone=config.timezone, grain_seconds=config.grain_seconds,
                                      currency=config.currency)
            for name, fig in sections.figures(report, config.currency, project).items():
                found[f"{project or 'admin'}:{name}"] = fig
        return found
    finally:
        con.close()


def drawn(fig: go.Figure):
    with matplotlib.rc_context(paper._rc()):
        out = paper.draw(paper.description(fig))
        out.canvas.draw_idle()
        out.savefig(__import__("io").StringIO(), format="svg")  # lays out the text (tick labels)
        return out


def plain(value) -> str:
    return html.unescape(str(value or "")).replace("<br>", "\n")


def bar_traces(ax, horizontal: bool) -> list[list[tuple[float, float, float]]]:
    """Each bar trace's bars as (position, base, end): one PolyCollection per trace, one box
    per bar, its corners (position - half, base), (position - half, end), (position + half,
    end), ... with x and y the other way round for a horizontal bar."""
    from matplotlib.collections import PolyCollection

    traces = []
    for collection in ax.collections:
        if isinstance(collection, PolyCollection) and collection.get_label() == "_bars":
            bars = []
            for path in collection.get_paths():
                corners = [(y, x) if horizontal else (x, y) for x, y in path.vertices[:3]]
                (left, base), (_, end), (right, _) = corners
                bars.append(((left + right) / 2, base, end))
            traces.append(bars)
    return traces


def _bar_values(trace) -> list[tuple[str, float]]:
    cats, values = (trace.y, trace.x) if trace.orientation == "h" else (trace.x, trace.y)
    return [(plain(c), float(v)) for c, v in zip(cats, values) if v is not None]


def test_every_figure_of_the_sample_month_is_covered(figures):
    names = {key.split(":", 1)[1] for key in figures}
    # each kind of chart the reports have, so the checks below meet every one
    assert {"trend", "daily", "users", "gpu_models", "image_tags", "density", "idle_waste", "leaderboard",
            "leaderboard_rank", "breakers", "tag_violations", "projects", "unallocated"} <= names
    assert any(key.startswith("视觉质检:") for key in figures)


def test_bars_have_the_figures_values_at_their_categories(figures):
    checked = 0
    for key, fig in figures.items():
        traces = [t for t in fig.data if t.type == "bar" and any(v is not None for v in
                                                                (t.x if t.orientation == "h" else t.y))]
        if not traces:
            continue
        out = drawn(fig)
        ax = out.axes[0]
        horizontal = traces[0].orientation == "h"
        drawn_traces = bar_traces(ax, horizontal)
        assert len(drawn_traces) == len(traces), key
        date_axis = fig.layout.xaxis.type == "date"
        labels = {round(t.get_position()[1 if horizontal else 0], 6): t.get_text()
                  for t in (ax.get_yticklabels() if horizontal else ax.get_xticklabels())}
        stacked = fig.layout.barmode == "stack"
        for trace, bars in zip(traces, drawn_traces):
            want = _bar_values(trace)
            assert len(bars) == len(want), key
            for (category, value), (center, base, end) in zip(want, bars):
                assert end - base == pytest.approx(value, abs=1e-9), (key, category)
                if date_axis:  # the bar stands on its day
                    day = matplotlib.dates.num2date(center).replace(tzinfo=None)
                    assert day == dt.datetime.fromisoformat(category), key
                elif not (len(traces) > 1 and not stacked):
                    shown = labels[round(center, 6)]
                    assert shown == paper._short(category), (key, category)
                checked += 1
        if stacked:  # each category's pile adds up to the figure's values
            piles: dict[str, float] = {}
            for trace in traces:
                for category, value in _bar_values(trace):
                    piles[category] = piles.get(category, 0.0) + value
            tops: dict[float, float] = {}
            for bars in drawn_traces:
                for center, base, end in bars:
                    at = round(center, 6)
                    tops[at] = max(tops.get(at, 0.0), end)
            assert sorted(tops.values()) == pytest.approx(sorted(piles.values())), key
    assert checked > 300


def test_titles_axis_titles_and_legends_are_the_figures(figures):
    for key, fig in figures.items():
        out = drawn(fig)
        ax = out.axes[0]
        title = re.sub(r"\s+", " ", out.get_suptitle())
        assert title == plain(fig.layout.title.text), key
        xtitle, ytitle = plain(fig.layout.xaxis.title.text), plain(fig.layout.yaxis.title.text)
        assert ax.get_xlabel() == xtitle and ax.get_ylabel() == ytitle, key
        second = fig.layout.to_plotly_json().get("yaxis2")
        if second:
            assert out.axes[1].get_ylabel() == plain(second["title"]["text"]), key
        named = [plain(t.name) for t in fig.data if t.showlegend is not False and t.name is not None]
        legends = out.legends
        if fig.layout.showlegend is False or len(named) < 2 and fig.layout.showlegend is not True:
            assert not legends, key
        else:
            assert [t.get_text() for t in legends[0].get_texts()] == named, key


def test_the_trend_line_breaks_at_a_partial_month_and_sits_on_the_right_axis(figures):
    fig = figures["admin:trend"]
    out = drawn(fig)
    line_trace = next(t for t in fig.data if t.type == "scatter" and "lines" in (t.mode or ""))
    twin = out.axes[1]
    line = twin.get_lines()[0]
    ys = list(line.get_ydata())
    want = [float("nan") if v is None else float(v) for v in line_trace.y]
    assert len(ys) == len(want)
    for got, expected in zip(ys, want):
        assert (got != got and expected != expected) or got == pytest.approx(expected)


def test_log_axis_ticks_are_the_figures(figures):
    fig = figures["admin:leaderboard"]
    assert fig.layout.xaxis.type == "log"
    ax = drawn(fig).axes[0]
    assert ax.get_xscale() == "log"
    assert list(ax.get_xticks()) == pytest.approx(list(fig.layout.xaxis.tickvals))
    assert [t.get_text() for t in ax.get_xticklabels()] == list(fig.layout.xaxis.ticktext)
    points = sum(len(c.get_offsets()) for c in ax.collections)
    assert points == sum(len(t.x) for t in fig.data)


def test_labels_are_shown_as_written_and_text_stays_text():
    fig = go.Figure(go.Bar(y=[charts.esc("<script>alert(1)</script>"), charts.esc("$5 & 视觉质检")], x=[1, 2],
                           orientation="h"))
    charts._layout(fig, "Cost by project (USD) $x$ 项目", 240, showlegend=False)
    svg = paper.svg(paper.description(fig))
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "<image" not in svg
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    assert "<script>alert(1)</script>" in texts and "$5 & 视觉质检" in texts
    assert "Cost by project (USD) $x$ 项目" in texts  # not read as mathtext
    assert "<script>" not in svg  # escaped in the SVG markup
    assert paper.svg(paper.description(fig)) == svg  # the same chart, the same bytes


def test_long_labels_end_in_an_ellipsis_and_long_titles_wrap():
    long = "registry.example.com/team/yolo-train:" + "x" * 80
    fig = go.Figure(go.Bar(y=[long], x=[3], orientation="h"))
    charts._layout(fig, "A title " * 30, 240, showlegend=False)
    out = drawn(fig)
    label = out.axes[0].get_yticklabels()[0].get_text()
    assert label.endswith("…") and len(label) == paper.LABEL_MAX and long.startswith(label[:-1])
    assert "\n" in out.get_suptitle()


def _title_box(out):
    title = out.get_suptitle()
    [text] = [t for t in out.findobj(matplotlib.text.Text) if t.get_text() == title and t.get_text()]
    return text.get_window_extent()


@pytest.mark.parametrize("title", [
    "Cost per mAP50 point: the best and the worst 10 of 168 configurations (148 between) (USD)",
    "WWWWWWWW MMMMMMMM " * 6 + "(USD)",
    "视觉质检 项目的每日成本 " * 8,
])
def test_a_long_title_is_wrapped_inside_the_chart(title):
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    charts._layout(fig, title, 300, showlegend=False)
    out = drawn(fig)
    box = _title_box(out)
    assert box.x0 >= 0 and box.x1 <= out.bbox.width, (box, out.bbox.width)
    assert re.sub(r"\s+", " ", out.get_suptitle()).strip() == re.sub(r"\s+", " ", title).strip()


def test_every_title_of_the_sample_month_fits_its_chart(figures):
    for key, fig in figures.items():
        out = drawn(fig)
        box = _title_box(out)
        assert box.x0 >= 0 and box.x1 <= out.bbox.width, key


def laid_out(fig: go.Figure):
    """The chart drawn, then laid out again at its own dpi for measuring (saving the SVG lays
    it out at 72 dpi and leaves the axis titles placed in those pixels)."""
    out = drawn(fig)
    with matplotlib.rc_context(paper._rc()):
        out.draw_without_rendering()
    return out, out._get_renderer()


def _in_view(ax, labels, which: int) -> list:
    """The tick labels matplotlib draws: those of ticks inside the axis's view."""
    low, high = sorted(ax.get_xlim() if which == 0 else ax.get_ylim())
    span = (high - low) * 1e-9
    return [t for t in labels if t.get_text() and low - span <= t.get_position()[which] <= high + span]


def _texts(out) -> list:
    """Every text the chart draws: tick labels in view, titles, bar labels, legend entries."""
    ticks = {id(t) for ax in out.axes for t in (*ax.get_xticklabels(), *ax.get_yticklabels())}
    shown = [t for ax in out.axes for t in (*_in_view(ax, ax.get_xticklabels(), 0), *_in_view(ax, ax.get_yticklabels(), 1))]
    others = [t for t in out.findobj(matplotlib.text.Text) if id(t) not in ticks and t.get_visible() and t.get_text().strip()]
    return shown + others


def _overlap(a, b, slack: float = 0.5) -> bool:
    return a.x0 < b.x1 - slack and b.x0 < a.x1 - slack and a.y0 < b.y1 - slack and b.y0 < a.y1 - slack


def labels_apart(ax, labels, renderer) -> bool:
    """No two tick labels crowd each other: side by side, their boxes do not overlap; one
    above the other, their centres stand `placement.label_pitch_px` apart (1.2 em a line,
    plotly's rule: the boxes, 1.36 em a line, may touch); turned ones (parallel) by the
    distance across their lines, the ticks' spacing times the sine of the angle."""
    if not labels:
        return True
    lines = max(t.get_text().count("\n") + 1 for t in labels)
    turned = [t for t in labels if t.get_rotation()]
    if turned:
        angle = math.radians(turned[0].get_rotation())
        at = sorted(ax.transData.transform((t.get_position()[0], 0))[0] for t in turned)
        return all((b - a) * math.sin(angle) >= placement.label_pitch_px(lines) - 0.5 for a, b in zip(at, at[1:]))
    boxes = [t.get_window_extent(renderer) for t in labels]
    if all(abs(b.x0 - boxes[0].x0) < 1 or abs(b.x1 - boxes[0].x1) < 1 for b in boxes):  # a column: one above the other
        centres = sorted((b.y0 + b.y1) / 2 for b in boxes)
        return all(q - p >= placement.label_pitch_px(lines) - 0.5 for p, q in zip(centres, centres[1:]))
    return not any(_overlap(p, q) for i, p in enumerate(boxes) for q in boxes[i + 1:])


def assert_laid_out(fig: go.Figure, key: str = "") -> None:
    """Every text the chart draws lies inside it; the title, the axes with their labels and
    the legend do not cover each other; no two tick labels of an axis touch."""
    out, renderer = laid_out(fig)
    whole = out.bbox
    for t in _texts(out):
        box = t.get_window_extent(renderer)
        assert box.x0 >= -0.5 and box.y0 >= -0.5 and box.x1 <= whole.width + 0.5 and box.y1 <= whole.height + 0.5, \
            (key, t.get_text(), box, whole)
    title = _title_box(out) if out.get_suptitle() else None
    axes = [a.get_tightbbox(renderer) for a in out.axes]
    legends = [legend.get_window_extent(renderer) for legend in out.legends]
    for a in axes:
        assert title is None or not _overlap(title, a), key
        assert not any(_overlap(a, legend) for legend in legends), (key, a, legends)
    for ax in out.axes:
        for labels in (_in_view(ax, ax.get_xticklabels(), 0), _in_view(ax, ax.get_yticklabels(), 1)):
            assert labels_apart(ax, labels, renderer), key


def test_every_text_of_the_sample_month_stays_inside_its_chart_and_apart(figures):
    """The axes are placed from measured text (no layout engine): every title, tick label,
    axis title, bar label and legend entry lies inside the chart, and apart."""
    for key, fig in figures.items():
        assert_laid_out(fig, key)


def _vertical(names: list[str], values: list[float] | None = None, **bar) -> go.Figure:
    fig = go.Figure(go.Bar(x=[charts.esc(n) for n in names], y=values or [float(i % 7 + 1) for i in range(len(names))], **bar))
    return charts._layout(fig, "GPU-hours by host", 340, showlegend=False).update_yaxes(title_text="GPU-hours")


@pytest.mark.parametrize("fig", [
    # a longer label after a short first one reaches further left
    _vertical(["gpu1"] + [f"gpu-node-{i:02d}.cluster.example.org" for i in range(1, 20)]),
    # sixty long labels, thinned at the axes' real width
    _vertical([f"{i:02d}-" + "x" * 45 for i in range(60)]),
    # labels of three lines, turned
    _vertical([f"name {i}<br>second line<br>third line {i}" for i in range(30)]),
    # 189 long host names in two stacked traces
    charts._layout(go.Figure([go.Bar(x=[f"gpu-node-{i:03d}.hpc.example.org" for i in range(189)], y=[1.0] * 189, name=n)
                              for n in ("A100", "A10G")]), "Unallocated GPU-hours by host", 340, barmode="stack"),
    # forty rows under a title of three lines, a legend below and an x title
    charts._layout(go.Figure([go.Bar(y=[f"user-{i:02d}" for i in range(40)], x=[float(k) for k in range(40)], orientation="h", name=n)
                              for n in ("own", "shared")]), "Cost by user " * 12, 300, barmode="stack")
    .update_xaxes(title_text="Cost (USD)"),
    # rows of two lines
    charts._layout(go.Figure(go.Bar(y=[f"user {i}<br>project {i}" for i in range(25)], x=[float(i) for i in range(25)],
                                    orientation="h")), "Cost by user", 420, showlegend=False),
    # a second axis of large numbers with a title of two lines
    charts._layout(go.Figure([go.Bar(x=["2026-09", "2026-10"], y=[1.5e6, 2.5e6], name="cost"),
                              go.Scatter(x=["2026-09", "2026-10"], y=[1.9e9, 2.1e9], yaxis="y2", name="GPU-hours")]),
                   "Cost and GPU-hours", 340, yaxis2={"overlaying": "y", "side": "right",
                                                      "title": {"text": "GPU-hours<br>per month"}}),
], ids=["first-short", "sixty-long", "three-lines", "189-stacked", "forty-rows", "two-line-rows", "second-axis"])
def test_crowded_long_and_many_lined_labels_stay_inside_and_apart(fig):
    assert_laid_out(fig)


@pytest.mark.parametrize("horizontal, values, log", [
    (True, [0.5, 1.0, 2.0, 4.0, 8.0, 20.1], False),
    (False, [0.5, 1.0, 2.0, 4.0, 8.0, 20.1], False),
    (True, [3.0, -1.0, 2.0, -8.5, 8.0, -20.1], False),  # a negative bar's label stands past its left end
    (False, [3.0, -1.0, 2.0, -8.5, 8.0, -20.1], False),
    (False, [1.0, 10.0, 100.0, 1e3, 1e4, 2e4], True),  # on a log scale
])
def test_a_label_past_a_bar_stays_inside_the_axes(horizontal, values, log):
    """Plotly lengthens the value axis so that a label written past the longest bar fits;
    the paper chart does too (the label used to stand over the chart's edge), at either end
    and on a log scale; the label stands past the bar's end, not over the bar."""
    names = [f"config {i}" for i in range(len(values))]
    bar = go.Bar(y=names, x=values, orientation="h") if horizontal else go.Bar(x=names, y=values)
    bar.update(text=[f"{v:,.2f} USD per point" for v in values], textposition="outside")
    fig = go.Figure(bar)
    charts._layout(fig, "Cost per mAP50 point", 300, showlegend=False)
    if log:
        fig.update_yaxes(type="log")
    out, renderer = laid_out(fig)
    ax = out.axes[0]
    written = {t.get_text(): t for t in _texts(out) if t.get_text().endswith("USD per point")}
    assert len(written) == len(values)
    for v in values:
        box = written[f"{v:,.2f} USD per point"].get_window_extent(renderer)
        if horizontal:  # inside the axes along the value axis (a label wider than its bar may overhang across it)
            assert ax.bbox.x0 - 0.5 <= box.x0 and box.x1 <= ax.bbox.x1 + 0.5, (horizontal, v, box, ax.bbox)
        else:
            assert ax.bbox.y0 - 0.5 <= box.y0 and box.y1 <= ax.bbox.y1 + 0.5, (horizontal, v, box, ax.bbox)
        end = ax.transData.transform((v, 0) if horizontal else (0, v))[0 if horizontal else 1]
        if horizontal:  # past the end, on the bar's side away from zero
            assert (box.x0 >= end - 0.5) if v >= 0 else (box.x1 <= end + 0.5), (v, box, end)
        else:
            assert (box.y0 >= end - 0.5) if v >= 0 else (box.y1 <= end + 0.5), (v, box, end)
    assert_laid_out(fig)


def test_a_crowded_category_axis_shows_every_kth_label_and_every_bar():
    """189 hosts side by side: plotly shows every k-th label of a crowded category axis; so
    does the paper chart, turned, none touching, each at its own bar; every bar is drawn."""
    hosts = [f"gpu-a100-{i:03d}" for i in range(189)]
    fig = go.Figure(go.Bar(x=hosts, y=[float(i % 17 + 1) for i in range(189)]))
    charts._layout(fig, "Unallocated GPU-hours by host", 340, showlegend=False)
    out, renderer = laid_out(fig)
    ax = out.axes[0]
    [bars] = bar_traces(ax, horizontal=False)
    assert [end for _, _, end in bars] == [float(i % 17 + 1) for i in range(189)]
    shown = [(t.get_position()[0], t.get_text()) for t in ax.get_xticklabels() if t.get_text()]
    step = round(shown[1][0] - shown[0][0])
    assert step > 1 and [text for _, text in shown] == hosts[::step]
    assert placement.label_step(189, ax.bbox.width, placement.label_pitch_px() / math.sin(math.radians(placement.ROTATION))) == step
    assert all(hosts[round(at)] == text for at, text in shown)
    assert len(_in_view(ax, ax.get_xticklabels(), 0)) == len(shown)
    assert labels_apart(ax, _in_view(ax, ax.get_xticklabels(), 0), renderer)
