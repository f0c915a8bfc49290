"""Plotly figures of the report sections, the same for the HTML page and the PDF.

Every figure is built from one section's data only, so a project report's figures hold
nothing the project's tables do not. Labels are HTML-escaped before they reach plotly.js:
it renders `<b>`, `<br>` and entities in text, so an escaped label shows literally (a
project called `<script>` is text in the SVG, not markup). No MathJax, no web fonts.
"""

from __future__ import annotations

import html
import math
from decimal import Decimal
from typing import Any, Iterable

import plotly.graph_objects as go

from ..money import Currency

FONT = '"Noto Sans", "Noto Sans CJK SC", "Helvetica Neue", Arial, sans-serif'
PALETTE = ["#3b6ea5", "#e07b39", "#4c9a6a", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c",
           "#ccb974", "#64b5cd", "#2f4b7c", "#a05195", "#f95d6a", "#ffa600", "#665191", "#d45087"]
BUCKET_COLORS = {"unlabeled": "#b0b7c0", "unallocated": "#dde2e8"}
STATUS_COLORS = {"ok": "#4c9a6a", "latest": "#c44e52", "empty": "#e07b39", "digest_only": "#8172b3",
                 "nonconforming": "#ccb974"}
WIDTH = 760  # px: the SVG width for the PDF (scaled to the page), the HTML chart fills its box
MAX_BARS = 20
DAY_MS = 86_400_000


def esc(value: Any) -> str:
    """A label as plotly.js shows it literally."""
    return html.escape("" if value is None else str(value), quote=False)


def esc_in_template(value: Any) -> str:
    """A label written into a hovertemplate: as `esc`, with `%` as an HTML entity, so that a
    label such as `%{x}` shows as written instead of being filled in by plotly.js."""
    return esc(value).replace("%", "&#37;")


def _f(value) -> float:
    return 0.0 if value is None else float(value)


def _money(value, currency: str) -> float:
    """An amount that is no ledger cents (a rate such as cost per mAP point) as the tables
    show it, rounded by `Currency.round`, for a hover or a bar: plotly.js's d3 format rounds
    the float as stored (1.005 is 1.00499... there, and shows as 1.00) where the table rounds
    the amount as it prints (1.01)."""
    return 0.0 if value is None else float(Currency(currency).round(value))


def _layout(fig: go.Figure, title: str, height: int, **extra) -> go.Figure:
    layout = {
        "template": "none",  # the look comes from the page (html.chart_template), not 7 KB per figure
        "title": {"text": esc(title), "x": 0, "xanchor": "left", "font": {"size": 14}},
        "font": {"family": FONT, "size": 11, "color": "#1f2933"},
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.12, "x": 0},
        "hoverlabel": {"font": {"family": FONT}},
    }
    fig.update_layout(**{**layout, **extra})
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def _cost_axis(currency: str, what: str = "Cost") -> dict:
    """An axis that shows money: its title names the currency."""
    return {"title_text": f"{what} ({esc(currency)})"}


def _amount(field: str, currency: str) -> str:
    """A hovertemplate's amount: plotly.js fills `field` ("x", "customdata[2]") in the
    currency's format (yolocost.money.Currency.spec: its minor unit's decimals, thousands
    grouped), followed by the currency's code."""
    return f"%{{{field}:{Currency(currency).spec}}} {currency}"


def _hbar_height(n: int) -> int:
    return max(220, min(MAX_BARS, n) * 24 + 90)


def _colors(names: Iterable[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(set(names)))}


def daily(section: dict, currency: str, colors: dict[str, str] | None = None) -> go.Figure | None:
    """Cost per day, stacked by project (admin; `colors` as in the other charts) or user."""
    found = section["rows"]
    if not found:
        return None
    series: dict[tuple[str, str], dict[str, float]] = {}
    for r in found:
        series.setdefault((r.get("bucket", "project"), r["series"]), {})[r["day"]] = _f(r["cost"])
    colors = colors or _colors(name for bucket, name in series if bucket == "project")
    days = sorted({r["day"] for r in found})
    fig = go.Figure()
    for (bucket, name), by_day in sorted(series.items(), key=lambda kv: (kv[0][0] != "project", kv[0][1])):
        fig.add_bar(x=[f"{d} 12:00" for d in days], y=[by_day.get(d, 0.0) for d in days], name=esc(name), width=DAY_MS * 0.8,
                    marker_color=BUCKET_COLORS.get(bucket, colors.get(name)),
                    hovertemplate=f"%{{x|%a %d %b}}<br>{esc_in_template(name)}: {_amount('y', currency)}<extra></extra>")
    _layout(fig, f"Cost per day by {section['series_label']} ({currency})", 380, barmode="stack")
    # the whole month, a tick a week, whatever days had usage; the ticks at noon, under their
    # day's bar, so the first label stays clear of the y axis's 0 in the corner
    fig.update_xaxes(type="date", tickformat="%d %b", dtick=7 * DAY_MS, tick0=f"{section['first_day']} 12:00",
                     range=[section["first_day"], section["next_month"]], ticks="outside", ticklen=4)
    fig.update_yaxes(**_cost_axis(currency))
    return fig


def project_colors(found: list[dict]) -> dict[str, str]:
    """One colour per project for every chart of the admin report."""
    return _colors(r["project"] for r in found if r["bucket"] == "project")


def projects(found: list[dict], currency: str) -> go.Figure | None:
    if not found:
        return None
    items = list(reversed(found))
    colors = project_colors(found)
    fig = go.Figure(go.Bar(
        y=[esc(r["project"]) for r in items], x=[_f(r["cents"]) for r in items], orientation="h",
        marker_color=[BUCKET_COLORS.get(r["bucket"], colors.get(r["project"])) for r in items],
        customdata=[[_f(r["gpu_hours"]), (r["share"] or 0) * 100] for r in items],
        hovertemplate=(f"%{{y}}: {_amount('x', currency)}<br>%{{customdata[0]:,.1f}} GPU-hours, "
                       "%{customdata[1]:.1f} % of the total<extra></extra>"),
    ))
    _layout(fig, f"Cost by project ({currency})", _hbar_height(len(items)), showlegend=False)
    return fig.update_xaxes(**_cost_axis(currency))


def users(found: list[dict], currency: str, colors: dict[str, str] | None) -> go.Figure | None:
    """Cost by user; in the admin report (`colors` given) labeled and coloured by project."""
    top = found[:MAX_BARS]
    if not top:
        return None
    items = list(reversed(top))
    admin = colors is not None
    label = (lambda r: f"{esc(r['user_name'])} · {esc(r['project'])}") if admin else (lambda r: esc(r["user_name"]))
    fig = go.Figure(go.Bar(
        y=[label(r) for r in items], x=[_f(r["cents"]) for r in items], orientation="h",
        marker_color=[BUCKET_COLORS.get(r["bucket"], colors.get(r["project"], PALETTE[0]))
                      if colors is not None else PALETTE[0] for r in items],
        customdata=[[r["jobs"], _f(r["gpu_hours"])] for r in items],
        hovertemplate=f"%{{y}}: {_amount('x', currency)}<br>%{{customdata[0]}} jobs, "
                      "%{customdata[1]:,.1f} GPU-hours<extra></extra>",
    ))
    title = f"Cost by user ({currency})" + (f", top {MAX_BARS}" if len(found) > MAX_BARS else "")
    _layout(fig, title, _hbar_height(len(items)), showlegend=False)
    return fig.update_xaxes(**_cost_axis(currency))


def gpu_models(found: list[dict], currency: str, admin: bool) -> go.Figure | None:
    if not found:
        return None
    names = [esc(r["gpu_model"]) for r in found]
    fig = go.Figure()
    if admin:
        fig.add_bar(x=names, y=[_f(r["attributed_cost"]) for r in found], name="held by jobs",
                    marker_color=PALETTE[0], hovertemplate=f"%{{x}}<br>held: {_amount('y', currency)}<extra></extra>")
        fig.add_bar(x=names, y=[_f(r["unallocated_cost"]) for r in found], name="unallocated",
                    marker_color=BUCKET_COLORS["unallocated"],
                    hovertemplate=f"%{{x}}<br>unallocated: {_amount('y', currency)}<extra></extra>")
        fig.add_bar(x=names, y=[_f(r["energy_cost"]) for r in found], name="energy",
                    marker_color=PALETTE[1], hovertemplate=f"%{{x}}<br>energy: {_amount('y', currency)}<extra></extra>")
        _layout(fig, f"Cost by GPU model ({currency})", 340, barmode="stack")
        return fig.update_yaxes(**_cost_axis(currency))
    fig.add_bar(x=names, y=[_f(r["cents"]) for r in found], marker_color=PALETTE[0],
                customdata=[_f(r["gpu_hours"]) for r in found],
                hovertemplate=f"%{{x}}: {_amount('y', currency)}<br>%{{customdata:,.1f}} GPU-hours<extra></extra>")
    _layout(fig, f"Cost by GPU model ({currency})", 320, showlegend=False)
    return fig.update_yaxes(**_cost_axis(currency))


def image_tags(section: dict, currency: str) -> go.Figure | None:
    top = section["rows"]
    if not top:
        return None
    items = list(reversed(top))
    fig = go.Figure()
    for status in sorted({r["tag_status"] for r in top}, key=lambda s: (s != "ok", s)):
        mine = [r for r in items if r["tag_status"] == status]
        fig.add_bar(y=[esc(r["image_tag"]) for r in mine], x=[_f(r["cents"]) for r in mine], orientation="h",
                    name=esc(status), marker_color=STATUS_COLORS.get(status, PALETTE[7]),
                    customdata=[[(r["density"] or 0) * 100, r["jobs"]] for r in mine],
                    hovertemplate=(f"%{{y}}: {_amount('x', currency)}<br>density %{{customdata[0]:.1f}} %, "
                                   "%{customdata[1]} jobs<extra>" + esc(status) + "</extra>"))
    fig.update_yaxes(categoryorder="array", categoryarray=[esc(r["image_tag"]) for r in items])
    title = f"Cost by image tag ({currency})" + (f", top {len(top)}" if section["other"] else "")
    _layout(fig, title, _hbar_height(len(items)), barmode="stack")
    return fig.update_xaxes(**_cost_axis(currency))


def density(section: dict) -> go.Figure | None:
    bins = section["bins"]
    if not section["jobs"]:
        return None
    fig = go.Figure(go.Bar(
        x=[b["label"] for b in bins], y=[b["jobs"] for b in bins],
        marker_color=[PALETTE[3] if i < len(bins) // 2 else PALETTE[0] for i, b in enumerate(bins)],
        customdata=[_f(b["gpu_hours"]) for b in bins],
        hovertemplate="density %{x}: %{y} jobs<br>%{customdata:,.1f} GPU-hours<extra></extra>",
    ))
    _layout(fig, "Jobs by effective compute density", 300, showlegend=False)
    fig.update_yaxes(title_text="jobs")
    return fig


def idle_waste(section: dict, currency: str, admin: bool) -> go.Figure | None:
    jobs = section["jobs"]
    if not jobs:
        return None
    items = list(reversed(jobs))
    fig = go.Figure(go.Bar(
        y=[esc(j["job_id"]) for j in items], x=[_f(j["idle_cost"]) for j in items], orientation="h",
        marker_color=PALETTE[3],
        customdata=[[_f(j["idle_gpu_hours"]), esc(j["user_name"]) + (" · " + esc(j["project"]) if admin else "")]
                    for j in items],
        hovertemplate=f"%{{y}} (%{{customdata[1]}}): {_amount('x', currency)}<br>%{{customdata[0]:,.2f}} idle "
                      "GPU-hours<extra></extra>",
    ))
    _layout(fig, f"Jobs with the most idle waste ({currency})", _hbar_height(len(items)), showlegend=False)
    return fig.update_xaxes(**_cost_axis(currency, "Idle cost"))


LOG_STEPS = ((Decimal(1), Decimal(2), Decimal(5)),
             (Decimal(1), Decimal("1.5"), Decimal(2), Decimal(3), Decimal(5), Decimal(7)))
LOG_PAD = 0.06  # decades of room on either side of the points


def log_ticks(values: list[float]) -> tuple[list[float], list[float], list[str]]:
    """Range (in decades), tick values and tick labels of a log axis over positive values:
    steps of 1-2-5 (1-1.5-2-3-5-7 over a short span, decades only over a long one), each
    labelled with its value, instead of plotly's unlabelled "2 3 4 ... 9" minor ticks."""
    low, high = math.log10(min(values)) - LOG_PAD, math.log10(max(values)) + LOG_PAD
    ticks: list[Decimal] = []
    for steps in ((Decimal(1),), *LOG_STEPS):
        candidates = [m * Decimal(10) ** e for e in range(math.floor(low), math.ceil(high) + 1) for m in steps]
        found = [t for t in candidates if low <= math.log10(t) <= high]
        if len(found) <= 10:
            ticks = found
        if len(found) >= 4:
            break
    return [low, high], [float(t) for t in ticks], [f"{t.normalize():,f}" for t in ticks]


def leaderboard(found: list[dict], currency: str) -> go.Figure | None:
    points = [r for r in found if r["mean_map50"] is not None]
    if not points:
        return None
    models = sorted({r["model_type"] or "" for r in points})
    colors = _colors(models)
    fig = go.Figure()
    for model in models:
        mine = [r for r in points if (r["model_type"] or "") == model]
        fig.add_scatter(
            x=[_f(r["mean_cost_per_run"]) for r in mine], y=[_f(r["mean_map50"]) for r in mine], mode="markers",
            name=esc(model), marker={"color": colors[model], "size": [8 + 3 * min(r["runs"], 6) for r in mine],
                                     "line": {"width": 0.5, "color": "#ffffff"}},
            # the amounts as the tables round them; the point stays where the exact cost puts it
            # (on a log axis a cost rounded to 0 would not be drawn)
            customdata=[[esc(r["image_tag"]), r["runs"], _money(r["cost_per_map50_point"], currency),
                         _money(r["mean_cost_per_run"], currency)] for r in mine],
            hovertemplate=(esc_in_template(model) + " on %{customdata[0]}<br>mAP50 %{y:.3f}, %{customdata[1]} run(s)<br>"
                           f"{_amount('customdata[3]', currency)} per run, {_amount('customdata[2]', currency)} per mAP point"
                           "<extra></extra>"))
    _layout(fig, "Value: mAP50 against cost per run (bubble size: number of runs)", 380,
            legend={"orientation": "v", "x": 1.01, "y": 1, "xanchor": "left", "yanchor": "top"})
    costs = [_f(r["mean_cost_per_run"]) for r in points]
    if min(costs) > 0 and max(costs) / min(costs) >= 3:  # a log axis pays off over a wide spread only
        span, values, labels = log_ticks(costs)
        fig.update_xaxes(title_text=f"Mean cost per run ({esc(currency)}, log scale)", type="log", range=span,
                         tickmode="array", tickvals=values, ticktext=labels)
    else:
        fig.update_xaxes(**_cost_axis(currency, "Mean cost per run"))
    fig.update_yaxes(title_text="Mean mAP50")
    return fig


LEADERBOARD_ENDS = 10  # the ranked chart shows the best and the worst this many of a longer board
HTML_ONLY = frozenset({"leaderboard"})  # hover-only figures the PDF leaves out (print has a labelled one)


def leaderboard_ends(found: list[dict], ends: int = LEADERBOARD_ENDS) -> tuple[list[dict], list[dict], int]:
    """The best and the worst `ends` rows of a ranked board (the whole board when it has no
    more than 2 x ends rows: then the second list is empty), and how many lie between."""
    if len(found) <= 2 * ends:
        return list(found), [], 0
    return list(found[:ends]), list(found[-ends:]), len(found) - 2 * ends


def leaderboard_rank(found: list[dict], currency: str, ends: int = LEADERBOARD_ENDS) -> go.Figure | None:
    """The leaderboard for paper: one labelled horizontal bar per configuration (rank, model
    config, image tag) with its cost per mAP50 point printed beside it, best value at the top;
    of a longer board the best and the worst `ends`, with a line saying how many lie between."""
    priced = [r for r in found if r["cost_per_map50_point"] is not None]
    if not priced:
        return None
    best, worst, between = leaderboard_ends(priced, ends)
    shown = Currency(currency)
    label = lambda r: f"#{r['rank']} {esc(r['model_type'] or '(no model)')} · {esc(r['image_tag'] or '(no tag)')}"  # noqa: E731
    hover = (f"%{{y}}: {_amount('x', currency)} per mAP50 point<br>%{{customdata[0]}} run(s), mAP50 "
             f"%{{customdata[1]:.3f}}, {_amount('customdata[2]', currency)} per run<extra></extra>")

    def bars(rows: list[dict], name: str, color: str) -> go.Bar:
        return go.Bar(
            y=[label(r) for r in rows], x=[_money(r["cost_per_map50_point"], currency) for r in rows],
            orientation="h", name=name, marker_color=color, text=[shown.format(r["cost_per_map50_point"]) for r in rows],
            textposition="outside", cliponaxis=False,
            customdata=[[r["runs"], _f(r["mean_map50"]), _money(r["mean_cost_per_run"], currency)] for r in rows],
            hovertemplate=hover)

    fig = go.Figure()
    if not worst:
        fig.add_trace(bars(best, "cost per mAP50 point", PALETTE[0]))
        title = f"Cost per mAP50 point, all {len(best)} configurations, best value first ({currency})"
        order = [label(r) for r in best]
    else:
        gap = f"… {between} more ranked #{best[-1]['rank'] + 1} to #{worst[0]['rank'] - 1} …"
        fig.add_trace(bars(best, f"best {len(best)}", PALETTE[2]))
        fig.add_trace(go.Bar(y=[gap], x=[None], orientation="h", showlegend=False, hoverinfo="skip"))
        fig.add_trace(bars(worst, f"worst {len(worst)}", PALETTE[3]))
        title = (f"Cost per mAP50 point: the best and the worst {ends} of {len(priced)} configurations "
                 f"({between} between) ({currency})")
        order = [label(r) for r in best] + [gap] + [label(r) for r in worst]
    n = len(order)
    _layout(fig, title, max(220, n * 22 + 110), showlegend=bool(worst), bargap=0.25)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=order, autorange="reversed")
    fig.update_xaxes(**_cost_axis(currency, "Cost per mAP50 point"), rangemode="tozero")
    return fig

def breakers(section: dict, currency: str) -> go.Figure | None:
    found = section["rows"][:MAX_BARS]
    if not found:
        return None
    items = list(reversed(found))
    fig = go.Figure(go.Bar(
        y=[f"{esc(r['job_id'])} · {r['start']}" for r in items], x=[_f(r["cents"]) for r in items],
        orientation="h", marker_color=PALETTE[4],
        customdata=[[_f(r["stretch_hours"]), _f(r["gpu_hours"])] for r in items],
        hovertemplate=f"%{{y}}: {_amount('x', currency)} saved<br>%{{customdata[0]:,.1f}} h stalled, "
                      "%{customdata[1]:,.1f} GPU-hours<extra></extra>",
    ))
    _layout(fig, f"What a pause would have saved ({currency})", _hbar_height(len(items)), showlegend=False)
    return fig.update_xaxes(**_cost_axis(currency, "Would have saved"))


def tag_violations(section: dict, currency: str) -> go.Figure | None:
    found = section["by_status"]
    if not found:
        return None
    fig = go.Figure(go.Bar(
        x=[esc(s["status"]) for s in found], y=[_f(s["cents"]) for s in found],
        marker_color=[STATUS_COLORS.get(s["status"], PALETTE[7]) for s in found],
        customdata=[s["jobs"] for s in found],
        hovertemplate=f"%{{x}}: {_amount('y', currency)}, %{{customdata}} jobs<extra></extra>",
    ))
    _layout(fig, f"Spend on images that break the tag policy ({currency})", 300, showlegend=False)
    return fig.update_yaxes(**_cost_axis(currency, "Spend"))


def unallocated(section: dict) -> go.Figure | None:
    hosts = section["hosts"]
    if not hosts:
        return None
    names = sorted({h["hostname"] for h in hosts})
    order = sorted(names, key=lambda n: -sum(_f(h["unallocated_gpu_hours"]) for h in hosts if h["hostname"] == n))
    models = sorted({h["gpu_model"] for h in hosts})
    colors = _colors(models)
    fig = go.Figure()
    for model in models:
        mine = {h["hostname"]: h for h in hosts if h["gpu_model"] == model}
        fig.add_bar(x=[esc(n) for n in order], y=[_f(mine[n]["unallocated_gpu_hours"]) if n in mine else 0 for n in order],
                    name=esc(model), marker_color=colors[model],
                    hovertemplate="%{x}: %{y:,.1f} unallocated GPU-hours<extra>" + esc_in_template(model) + "</extra>")
    _layout(fig, "Unallocated GPU-hours by host", 340, barmode="stack")
    fig.update_yaxes(title_text="GPU-hours")
    return fig


def trend(section: dict, currency: str) -> go.Figure | None:
    """Cost per month (bars; a partial month paler, labelled with its coverage) and GPU-hours
    (line, right axis) over the trend's months."""
    found = section["rows"]
    if not found:
        return None
    months = [r["month"] for r in found]
    fig = go.Figure()
    fig.add_bar(
        x=months, y=[_f(r["cents"]) for r in found], name=f"cost ({esc(currency)})",
        marker_color=[PALETTE[0] if not r["partial"] else "#a9c1dc" for r in found],
        marker_line_color=PALETTE[0], marker_line_width=[0 if not r["partial"] else 1 for r in found],
        text=[f"partial, {esc(r['percent'])}" if r["partial"] else "" for r in found], textposition="outside",
        customdata=[[_f(r["gpu_hours"]), (r["coverage"] or 0) * 100] for r in found],
        hovertemplate=(f"%{{x}}: {_amount('y', currency)}<br>%{{customdata[0]:,.1f}} GPU-hours, "
                       "%{customdata[1]:.1f} % of the month held<extra></extra>"),
    )
    # the line joins whole months only: a partial month's point stands apart, hollow
    fig.add_scatter(
        x=months, y=[None if r["partial"] else _f(r["gpu_hours"]) for r in found], name="GPU-hours", yaxis="y2",
        mode="lines+markers", connectgaps=False, line={"color": PALETTE[1]}, marker={"color": PALETTE[1]},
        hovertemplate="%{x}: %{y:,.1f} GPU-hours<extra></extra>",
    )
    partial = [r for r in found if r["partial"]]
    if partial:
        fig.add_scatter(
            x=[r["month"] for r in partial], y=[_f(r["gpu_hours"]) for r in partial], yaxis="y2", mode="markers",
            name="GPU-hours (partial month)", marker={"color": "#ffffff", "size": 8, "line": {"color": PALETTE[1], "width": 2}},
            hovertemplate="%{x} (partial): %{y:,.1f} GPU-hours<extra></extra>",
        )
    _layout(fig, f"Cost and GPU-hours per month ({currency})", 340,
            yaxis={"title": {"text": f"cost ({esc(currency)})"}, "rangemode": "tozero"},
            yaxis2={"title": {"text": "GPU-hours"}, "overlaying": "y", "side": "right", "rangemode": "tozero",
                    "showgrid": False})
    fig.update_xaxes(type="category")
    return fig

