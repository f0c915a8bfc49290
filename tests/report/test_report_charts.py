"""Chart details that a rendered page does not show without hovering: labels written into a
hovertemplate cannot act as template fields, and a hover shows an amount's cents as the
table beside it does."""

from __future__ import annotations

from decimal import Decimal

from yolocost.money import Currency
from yolocost.report import charts


def test_a_label_that_looks_like_a_template_field_stays_text():
    section = {"rows": [{"bucket": "project", "series": "%{y} <b>", "day": "2026-10-01", "cost": 1.0}],
               "series_label": "project", "first_day": "2026-10-01", "next_month": "2026-11-01"}
    [trace] = charts.daily(section, "USD").data
    assert "%{y} &lt;b&gt;" not in trace.hovertemplate
    assert "&#37;{y} &lt;b&gt;: %{y:,.2f} USD" in trace.hovertemplate  # plotly.js shows &#37; as %
    assert trace.name == "%{y} &lt;b&gt;"  # a trace name is not a template: only HTML-escaped


def shown_by_plotly(value: float) -> str:
    """What plotly.js's d3 format ",.2f" writes for the float (Number.toFixed: the float's
    exact binary value rounded; Python's format agrees but at exact binary ties, none here)."""
    return format(value, ",.2f")


def test_a_rate_hovers_with_the_cents_its_table_shows():
    """A cost per run or per mAP point is no ledger cents: at a half cent the float plotly gets
    lies just below or above the tie (1.005 is stored as 1.00499...), so the hover must get
    the amount already rounded as the table rounds it."""
    rows = [{"rank": 1, "model_type": "yolov8n", "image_tag": "cu121", "runs": 2, "mean_map50": 0.5,
             "mean_cost_per_run": Decimal("1.005000000"), "cost_per_map50_point": 2.675},
            {"rank": 2, "model_type": "yolov8s", "image_tag": "cu121", "runs": 1, "mean_map50": 0.25,
             "mean_cost_per_run": Decimal("0.145000000"), "cost_per_map50_point": 8.345}]
    table = Currency("USD")
    assert [shown_by_plotly(float(r["mean_cost_per_run"])) for r in rows] == ["1.00", "0.14"]  # the trap
    [scatter, *_] = charts.leaderboard(rows, "USD").data
    assert "%{customdata[3]:,.2f} USD per run" in scatter.hovertemplate
    assert shown_by_plotly(scatter.customdata[0][3]) == table.format(rows[0]["mean_cost_per_run"]) == "1.01"
    assert shown_by_plotly(scatter.customdata[0][2]) == table.format(rows[0]["cost_per_map50_point"]) == "2.68"
    assert list(scatter.x) == [1.005]  # the point where the exact cost puts it
    [bars] = charts.leaderboard_rank(rows, "USD").data
    assert [shown_by_plotly(x) for x in bars.x] == [table.format(r["cost_per_map50_point"]) for r in rows] \
        == list(bars.text) == ["2.68", "8.35"]
    assert [shown_by_plotly(c[2]) for c in bars.customdata] == [table.format(r["mean_cost_per_run"]) for r in rows] \
        == ["1.01", "0.15"]


def test_a_cost_under_half_a_cent_keeps_its_point_on_a_log_axis():
    """A cheap configuration on the value chart's log axis: its point is placed by its exact
    cost (rounded to 0.00 it would not be drawn), its hover shows the cents."""
    rows = [{"rank": i, "model_type": "yolov8n", "image_tag": f"t{i}", "runs": 1, "mean_map50": 0.5,
             "mean_cost_per_run": Decimal(cost), "cost_per_map50_point": float(cost) / 50}
            for i, cost in enumerate(("0.004", "0.5", "0.0149"), start=1)]
    fig = charts.leaderboard(rows, "USD")
    assert fig.layout.xaxis.type == "log"
    [scatter] = fig.data
    assert list(scatter.x) == [0.004, 0.5, 0.0149]
    assert [shown_by_plotly(c[3]) for c in scatter.customdata] == ["0.00", "0.50", "0.01"]
