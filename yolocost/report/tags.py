"""The section "Image tags compared": the rows of the named query image_tag_comparison.

The section runs the query from queries/ for the audience (reading.query_rows), so the
report and `yolocost query image_tag_comparison` print the same figures; here each row gets
its place in its group and its comparison in words, and the section its totals.
"""

from __future__ import annotations

from decimal import Decimal

from ..money import Currency
from . import listing
from .gpufit import short_name
from .reading import query_rows

TAG_COMPARISON_QUERY = "image_tag_comparison"  # queries/: the section's rows, whole
TAG_COMPARISON_PRINTED = 3  # the PDF prints each model type x GPU model's fastest this many tags


def image_tag_comparison(con, month: str, project: str | None, currency: Currency) -> dict:
    """Image tags compared: the rows of the named query image_tag_comparison (per model type x
    GPU model x image tag with a run that finished an epoch in the month: runs, epochs,
    GPU-hours, epochs per GPU-hour, peak memory, fits per GPU, ledger cents and cost per epoch
    as a rate on them, speed and memory against the model type x GPU model's fastest tag), so
    the section and the query show the same figures. A project's report runs it with the
    query's "every project" test taken out, so only `project = ? AND bucket = 'project'` picks
    its rows (a project named "all" sees its own runs only). Each row gets `versus`, the
    comparison in words ('fastest', or '-15.0 % speed, -33.3 % memory'), `group`, its place
    among the model type x GPU model groups (for the table's banding), `rank_in_group` (1 =
    the fastest) and `group_size` (the PDF prints the TAG_COMPARISON_PRINTED fastest of each
    group); the totals are sums of all the rows (ledger tenths and cents)."""
    found = query_rows(con, TAG_COMPARISON_QUERY, month, project)
    groups: list[tuple] = []
    sizes: dict[tuple, int] = {}
    for r in found:
        key = (r["model_type"], r["gpu_model"], r["gpus"])
        if not groups or groups[-1] != key:
            groups.append(key)
        sizes[key] = sizes.get(key, 0) + 1
        r["group"] = len(groups)
        r["rank_in_group"] = sizes[key]  # the query lists a group's tags fastest first
        r["gpu_model_short"] = short_name(r["gpu_model"]) if r["gpu_model"] else r["gpu_model"]
        r["versus"] = tag_versus(r)
    for r in found:
        r["group_size"] = sizes[(r["model_type"], r["gpu_model"], r["gpus"])]
    section = {"rows": found, "groups": len(groups), "printed_per_group": TAG_COMPARISON_PRINTED,
               "runs": sum(r["runs"] for r in found),
               "epochs": sum(r["epochs"] for r in found),
               "gpu_hours": sum((r["gpu_hours"] for r in found), Decimal("0.0")),
               "cents": sum((r["cost"] for r in found), currency.zero)}
    section["listing"] = listing.tag_comparison(section, currency)  # the PDF's rows, as text
    return section


def tag_versus(row: dict) -> str:
    """A tag against the fastest tag of its model type x GPU model, in words."""
    if row["image_tag"] == row["fastest_tag"]:
        return "fastest"
    parts = []
    if row["speed_vs_fastest_pct"] is not None:
        parts.append(f"{row['speed_vs_fastest_pct']:+.1f} % speed")
    if row["memory_vs_fastest_pct"] is not None:
        parts.append(f"{row['memory_vs_fastest_pct']:+.1f} % memory")
    return ", ".join(parts)
