"""The interactive HTML report: one self-contained file, plotly.js inlined once.

Each chart is a `<div>` plus its figure as JSON in a `<script type="application/json">`
(every `<`, `>` and `&` written as a \\u escape, so no label can close the script), drawn by
one small script at the end of the page. Nothing is loaded from the network: no CDN, no web
fonts, no MathJax.
"""

from __future__ import annotations

import functools

import plotly.graph_objects as go
from markupsafe import Markup

_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
                 0x2028: "\\u2028", 0x2029: "\\u2029"}


# plotly's "plotly_white" look, kept to what the report's charts use (cartesian axes, bars,
# lines; no polar, 3-D or map settings)
_LOOK = ("autotypenumbers", "colorway", "font", "hoverlabel", "hovermode", "paper_bgcolor", "plot_bgcolor", "title",
         "xaxis", "yaxis")


def _safe_json(text: str) -> str:
    return text.translate(_JSON_ESCAPES)


def figure_json(fig: go.Figure) -> str:
    """The figure's {data, layout} as JSON that is safe inside a <script> element."""
    return _safe_json(fig.to_json(validate=False, pretty=False, remove_uids=True))


@functools.lru_cache(maxsize=1)
def chart_template() -> Markup:
    """The charts' look as JSON, written once in the page: charts.js gives it to every figure.
    The figures are built with template "none": each carried the whole plotly_white template
    (7 KB of JSON) before, and validating it was most of the time spent building a figure."""
    import json

    import plotly.io as pio

    white = pio.templates["plotly_white"].to_plotly_json()
    look = {"layout": {k: v for k, v in white["layout"].items() if k in _LOOK},
            "data": {k: v for k, v in white["data"].items() if k in ("bar", "scatter")}}
    return Markup(_safe_json(json.dumps(look, separators=(",", ":"), sort_keys=True)))


@functools.lru_cache(maxsize=1)
def plotly_js() -> str:
    """plotly.js as shipped with plotly.py (no network)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def chart_markup(name: str, fig: go.Figure) -> Markup:
    height = int(fig.layout.height or 360)
    return Markup(
        f'<div class="plot" id="chart-{name}" style="height:{height}px"></div>'
        f'<script type="application/json" data-chart="chart-{name}">{figure_json(fig)}</script>'
    )
