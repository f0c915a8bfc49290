"""The "What to do" section: recommendations ranked by the money each is about.

Each action is derived from the figures of another report section and carries `amount`
(Decimal, in cents of the report currency: a figure that section prints, or a sum of them),
`basis` (what that amount is, in words), and `section` (the id of the section it comes
from). The list is sorted by amount, largest first, so the first action is the one with the
most money behind it.
"""

from __future__ import annotations

from decimal import Decimal

from .. import money

FEW_RUNS = 3  # a value comparison resting on fewer runs than this says so


def _dec(value) -> Decimal:
    return Decimal(0) if value is None else Decimal(value)


def _runs(n: int) -> str:
    return f"{n} run{'' if n == 1 else 's'}"


def _config(row: dict) -> str:
    return f"{row['model_type']} on {row['image_tag']}"


def actions(report: dict, project: str | None, currency: str) -> list[dict]:
    """Things to do, each with the amount it is about and its basis, largest amount first."""
    places = money.minor_unit(currency)

    def cents(value) -> Decimal:
        return money.round_cents(_dec(value), places)

    def cash(value) -> str:
        return f"{cents(value):,.{places}f} {currency}"

    out = []
    jobs = report["idle_waste"]["jobs"][:3]
    if jobs:
        amount = sum((cents(j["idle_cost"]) for j in jobs), cents(0))
        names = "; ".join(
            f"{j['job_id']} ({j['user_name']}{'' if project else ', ' + j['project']}): "
            f"{j['idle_gpu_hours']:,.1f} idle GPU-hours, {cash(j['idle_cost'])}" for j in jobs)
        many = len(jobs) > 1
        out.append({"section": "idle_waste", "amount": amount,
                    "basis": f"idle cost of the {len(jobs)} job{'s' if many else ''}",
                    "title": f"Look at the {len(jobs)} job{'s' if many else ''} with the most idle waste",
                    "detail": names + ". Check their data loading, or release GPUs the job does not use."})
    br = report["breakers"]
    if br["rows"]:
        top = br["rows"][0]
        out.append({"section": "breakers", "amount": cents(br["cents"]),
                    "basis": "cost a breaker would have saved",
                    "title": "Pause stalled runs",
                    "detail": f"{len(br['rows'])} stretch(es) in {br['jobs']} job(s) ran under the breaker "
                              f"utilization with no loss improvement ({br['gpu_hours']:,.1f} GPU-hours); the largest "
                              f"is {top['job_id']} ({top['user_name']}), {top['stretch_hours']:,.1f} h from "
                              f"{top['start']}. An automatic pause (early stopping) would stop them."})
    tv = report["tag_violations"]
    if tv["by_status"]:
        parts = ", ".join(f"{s['status']}: {s['jobs']} job(s), {cash(s['cents'])}" for s in tv["by_status"])
        out.append({"section": "tag_violations", "amount": cents(tv["cents"]),
                    "basis": "cost of the runs on images that break the tag policy",
                    "title": "Retag images that break the tag policy",
                    "detail": f"{parts}. Use purpose-yoloversion-optimization-cuda tags so every run can be traced."})
    out += _density(report["density"], cents, cash)
    out += _value(report["leaderboard"], cents, cash, currency, places)
    un = report.get("unallocated") if project is None else None
    if un and un["hosts"] and cents(un["cents"]) > 0:
        out.append(_unallocated(un, cents, cash))
    # largest amount first; equal amounts keep the order above
    return sorted(out, key=lambda a: -a["amount"])


def _density(dens: dict, cents, cash) -> list[dict]:
    """Jobs busy less than half the time: the density bands under 50 % (the lower half of
    the section's equal bands), with the cost that section prints for them."""
    low = dens["bins"][:len(dens["bins"]) // 2]
    jobs = sum(b["jobs"] for b in low)
    if not jobs:
        return []
    amount = sum((cents(b["cents"]) for b in low), cents(0))
    hours = sum(float(b["gpu_hours"] or 0) for b in low)
    return [{"section": "density", "amount": amount,
             "basis": f"cost of the {jobs} job{'s' if jobs > 1 else ''} busy less than half the time",
             "title": f"Raise density: {jobs} job(s) were busy less than half the time",
             "detail": f"They held {hours:,.1f} GPU-hours ({cash(amount)}). Larger batches, more data-loader "
                       "workers or a smaller GPU (or a MIG slice) fit them better."}]


def _value(board: list[dict], cents, cash, currency: str, places: int) -> list[dict]:
    """The leaderboard's cheapest configuration per mAP50 point against its dearest. Only
    configurations with at least FEW_RUNS runs are compared when two or more have that many;
    a comparison resting on fewer says on how many runs. The amount is what the dearest
    configuration's runs cost: its runs x its mean cost per run, both as the leaderboard
    prints them."""
    priced = [r for r in board if r["cost_per_map50_point"] is not None]
    solid = [r for r in priced if r["runs"] >= FEW_RUNS]
    compared = solid if len(solid) >= 2 else priced
    if len(compared) < 2:
        return []
    best = min(compared, key=lambda r: r["cost_per_map50_point"])
    worst = max(compared, key=lambda r: r["cost_per_map50_point"])
    if best is worst:
        return []
    amount = cents(worst["mean_cost_per_run"]) * worst["runs"]
    left_out = len(priced) - len(compared)
    note = (f" Only configurations with at least {FEW_RUNS} runs are compared ({left_out} with fewer left out)."
            if left_out else "")
    few = [r for r in (best, worst) if r["runs"] < FEW_RUNS]
    if few:
        note += (" This rests on few runs (" + " and ".join(f"{_runs(r['runs'])} of {_config(r)}" for r in few)
                 + "): check it again with more.")
    title = f"Prefer {_config(best)} for value"
    if best["runs"] < FEW_RUNS:
        title += f" (based on {_runs(best['runs'])})"
    return [{"section": "leaderboard", "amount": amount,
             "basis": f"cost of the {_runs(worst['runs'])} of {_config(worst)} "
                      f"at {cash(worst['mean_cost_per_run'])} per run",
             "title": title,
             "detail": f"{best['cost_per_map50_point']:,.{places}f} {currency} per mAP50 point "
                       f"({_runs(best['runs'])}) against {worst['cost_per_map50_point']:,.{places}f} {currency} "
                       f"for {_config(worst)} ({_runs(worst['runs'])}).{note}"}]


def _unallocated(un: dict, cents, cash) -> dict:
    """Capacity nobody held, pointing at the host with the largest unallocated cost."""
    hosts = un["hosts"]
    host = max(hosts, key=lambda h: cents(h["cents"]))  # the first of equals, in the section's order
    most_hours = max(hosts, key=lambda h: h["unallocated_gpu_hours"] or 0)
    other = ""
    if most_hours is not host and (most_hours["unallocated_gpu_hours"] or 0) > (host["unallocated_gpu_hours"] or 0):
        other = (f" (the most hours: {most_hours['hostname']}, {most_hours['unallocated_gpu_hours']:,.1f} "
                 f"GPU-hours, {cash(most_hours['cents'])})")
    return {"section": "unallocated", "amount": cents(un["cents"]),
            "basis": "cost of the capacity nobody held, GPU time and energy",
            "title": "Use or give back idle capacity",
            "detail": f"{un['gpu_hours']:,.1f} GPU-hours unallocated. The host with the largest unallocated cost is "
                      f"{host['hostname']} ({host['gpu_model']}): {cash(host['cents'])} of GPU time, "
                      f"{host['unallocated_gpu_hours']:,.1f} GPU-hours, {(host['share'] or 0) * 100:.0f} % of its "
                      f"capacity{other}. Shrink the pool or lend it out."}
