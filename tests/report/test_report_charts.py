"""Chart details that a rendered page does not show without hovering: labels written into a
hovertemplate cannot act as template fields."""

from __future__ import annotations

from yolocost.report import charts


def test_a_label_that_looks_like_a_template_field_stays_text():
    section = {"rows": [{"bucket": "project", "series": "%{y} <b>", "day": "2026-10-01", "cost": 1.0}],
               "series_label": "project", "first_day": "2026-10-01", "next_month": "2026-11-01"}
    [trace] = charts.daily(section, "USD").data
    assert "%{y} &lt;b&gt;" not in trace.hovertemplate
    assert "&#37;{y} &lt;b&gt;: %{y:,.2f} USD" in trace.hovertemplate  # plotly.js shows &#37; as %
    assert trace.name == "%{y} &lt;b&gt;"  # a trace name is not a template: only HTML-escaped
