"""The "What to do" section: recommendations ranked by the money each would save.

Each action carries `amount` (Decimal, rounded to the report currency's minor unit: the
estimated saving, from the figures of another report section), `basis` (how that saving is
computed, in one line) and `section` (the id of the section it comes from). The list is
sorted by saving, largest first, so the first action is the one that would save the most;
an action that would save nothing is left out. Savings are estimates, not bills: each basis
says how it is made.

What saves no money (the tag policy: retagging changes no spend) is not an action here but
a policy note (`policy_notes`), listed apart with no amount. No action contradicts another:
the value tip recommends only a configuration whose image tag the tag policy accepts.
"""

from __future__ import annotations

from decimal import Decimal

from ..money import Currency
from . import gpufit

FEW_RUNS = 3  # a value comparison resting on fewer runs than this says so
DENSITY_TARGET = 0.5  # the density tip's target: busy half the time


def _dec(value) -> Decimal:
    """An amount as Decimal; a float read as it prints, as Currency.round reads it, so that a
    figure here has the cents the tables and charts show for it."""
    if value is None:
        return Decimal(0)
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _runs(n: int) -> str:
    return f"{n} run{'' if n == 1 else 's'}"


def _config(row: dict) -> str:
    return f"{row['model_type']} on {row['image_tag']}"


def actions(report: dict, project: str | None, currency: Currency) -> list[dict]:
    """Things to do, each with its estimated saving and how it is computed, largest first."""

    def cents(value) -> Decimal:
        return currency.round(_dec(value))

    def cash(value) -> str:
        return currency.format(_dec(value), with_code=True)

    out: list[dict] = []
    jobs = report["idle_waste"]["jobs"][:3]
    if jobs:
        amount = sum((cents(j["idle_cost"]) for j in jobs), cents(0))
        names = "; ".join(
            f"{j['job_id']} ({j['user_name']}{'' if project else ', ' + j['project']}): "
            f"{j['idle_gpu_hours']:,.1f} idle GPU-hours, {cash(j['idle_cost'])}" for j in jobs)
        many = len(jobs) > 1
        out.append({"section": "idle_waste", "amount": amount,
                    "basis": f"saving = the idle cost of the {len(jobs)} job{'s' if many else ''} (their GPU time "
                             f"under the idle threshold), had they kept their GPUs busy: idle time spread through "
                             f"a run, which no stopping policy reclaims; better data loading does",
                    "title": f"Look at the {len(jobs)} job{'s' if many else ''} with the most idle waste",
                    "detail": names + ". Check their data loading, or release GPUs the job does not use."})
    breaker = _breaker(report.get("policies") or {}, report["breakers"], cents)
    if breaker:
        out.append(breaker)
    idle = _idle_reclaim(report.get("policies") or {}, cents)
    if idle:
        out.append(idle)
    out += _density(report["density"], cents, cash)
    out += _value(report["leaderboard"], cents, cash, currency)
    smaller = _smaller_gpu(report, project, cents, cash)
    if smaller:
        out.append(smaller)
    un = report.get("unallocated") if project is None else None
    if un and un["hosts"] and cents(un["cents"]) > 0:
        out.append(_unallocated(un, cents, cash))
    out = [a for a in out if a["amount"] > 0]
    # largest saving first; equal savings keep the order above
    return sorted(out, key=lambda a: -a["amount"])


def policy_notes(report: dict, currency: Currency) -> list[dict]:
    """What the month's policies ask for that saves no money (listed apart from the actions,
    never as a saving): runs on image tags that break the tag policy."""
    tv = report["tag_violations"]
    if not tv["by_status"]:
        return []
    parts = ", ".join(f"{s['status']}: {s['jobs']} job(s), {currency.format(_dec(s['cents']), with_code=True)}"
                      for s in tv["by_status"])
    return [{"section": "tag_violations", "title": "Retag images that break the tag policy",
             "detail": f"{parts} of spend on such images. Use purpose-yoloversion-optimization-cuda tags so every "
                       "run can be traced; retagging saves nothing by itself."}]


def _breaker(w: dict, br: dict, cents) -> dict | None:
    """Enforce the breaker: the replay's saving net of its false stops (the GPU time after the
    rule would have stopped each stalled run; the stretch before the stop saves nothing)."""
    p = next((p for p in w.get("policies", []) if p["policy"] == "breaker"), None)
    if p is None or cents(p["net_cost"]) <= 0:
        return None
    fp = p["false_positives"]
    kept = [r for r in br.get("rows", []) if not r.get("improved_later")]
    largest = (f"; the largest stalled stretch is {kept[0]['job_id']} ({kept[0]['user_name']}), "
               f"{kept[0]['stretch_hours']:,.1f} h from {kept[0]['start']}") if kept else ""
    return {"section": "policies", "policy": "breaker", "amount": cents(p["net_cost"]),
            "basis": f"saving = the cost of each stalled run's GPU time after the breaker would have stopped it, "
                     f"in the month's replay, net of {fp} false stop{'' if fp == 1 else 's'} "
                     f"({p['jobs_stopped']} stops; a job that improved later was not stalled)",
            "title": "Pause stalled runs",
            "detail": f"The replay ({p['rule']}) would have stopped {p['jobs_stopped'] - fp} run(s) that trained "
                      f"no further ({p['net_gpu_hours']:,.1f} GPU-hours){largest}. An automatic pause (early "
                      f"stopping) would stop them."}


def _idle_reclaim(w: dict, cents) -> dict | None:
    """Enforce idle reclaim: the replay's saving net of its false positives."""
    p = next((p for p in w.get("policies", []) if p["policy"] == "idle_reclaim"), None)
    if p is None or cents(p["net_cost"]) <= 0:
        return None
    fp = p["false_positives"]
    return {"section": "policies", "policy": "idle_reclaim", "amount": cents(p["net_cost"]),
            "basis": f"saving = the cost of each stopped job's GPU time after the stop in the month's replay, "
                     f"net of {fp} false positive{'' if fp == 1 else 's'} ({p['jobs_stopped']} stops)",
            "title": "Enforce idle reclaim",
            "detail": f"The replay ({p['rule']}) would have released {p['jobs_stopped'] - fp} job(s) that held GPUs "
                      f"doing nothing ({p['net_gpu_hours']:,.1f} GPU-hours); {fp} stop(s) would have been false "
                      f"(training improved later)."}


def _density(dens: dict, cents, cash) -> list[dict]:
    """Jobs busy less than half the time. Saving: had each run at 50 % density, its busy time
    would have needed only density / 50 % of its GPU-hours: sum of cost x (1 - density / 0.5)
    over those jobs (`low_saving` of the section's data)."""
    jobs = dens.get("low_jobs") or 0
    if not jobs:
        return []
    amount = cents(dens.get("low_saving"))
    return [{"section": "density", "amount": amount,
             "basis": f"saving = the cost of the {jobs} job{'s' if jobs > 1 else ''} busy less than half the time "
                      f"x (1 - density / 50 %): the GPU-hours they would not have needed at 50 % density",
             "title": f"Raise density: {jobs} job(s) were busy less than half the time",
             "detail": f"They held {float(dens.get('low_gpu_hours') or 0):,.1f} GPU-hours ({cash(dens.get('low_cost'))}). "
                       "Larger batches, more data-loader workers or a smaller GPU (or a MIG slice) fit them better."}]


def _value(board: list[dict], cents, cash, currency: Currency) -> list[dict]:
    """The leaderboard's cheapest configuration per mAP50 point whose image tag the tag
    policy accepts (`tag_ok`), against its dearest configuration. Only configurations with at
    least FEW_RUNS runs are compared when two or more have that many; a comparison resting on
    fewer says on how many runs. Saving: the dearest configuration's runs (its runs x its mean
    cost per run, as the leaderboard prints them) x (1 - best cost per point / its cost per
    point): the same mAP50 points at the cheaper configuration's price."""
    priced = [r for r in board if r["cost_per_map50_point"] is not None]
    solid = [r for r in priced if r["runs"] >= FEW_RUNS]
    compared = solid if len(solid) >= 2 else priced
    if len(compared) < 2:
        return []
    allowed = [r for r in compared if r.get("tag_ok", True)]
    if not allowed:
        return []
    best = min(allowed, key=lambda r: r["cost_per_map50_point"])
    worst = max(compared, key=lambda r: r["cost_per_map50_point"])
    if best is worst:
        return []
    spent = cents(worst["mean_cost_per_run"]) * worst["runs"]
    amount = cents(spent * (1 - Decimal(repr(best["cost_per_map50_point"])) / Decimal(repr(worst["cost_per_map50_point"]))))
    left_out = len(priced) - len(compared)
    note = (f" Only configurations with at least {FEW_RUNS} runs are compared ({left_out} with fewer left out)."
            if left_out else "")
    cheapest = min(compared, key=lambda r: r["cost_per_map50_point"])
    if cheapest is not best:
        note += (f" {_config(cheapest)} is cheaper per point but its image tag breaks the tag policy, so it is not "
                 "recommended.")
    few = [r for r in (best, worst) if r["runs"] < FEW_RUNS]
    if few:
        note += (" This rests on few runs (" + " and ".join(f"{_runs(r['runs'])} of {_config(r)}" for r in few)
                 + "): check it again with more.")
    title = f"Prefer {_config(best)} for value"
    if best["runs"] < FEW_RUNS:
        title += f" (based on {_runs(best['runs'])})"
    return [{"section": "leaderboard", "amount": amount,
             "basis": f"saving = the cost of the {_runs(worst['runs'])} of {_config(worst)} "
                      f"at {cash(worst['mean_cost_per_run'])} per run x (1 - {currency.format(_dec(best['cost_per_map50_point']))} / "
                      f"{currency.format(_dec(worst['cost_per_map50_point']))} per mAP50 point)",
             "title": title,
             "detail": f"{cash(best['cost_per_map50_point'])} per mAP50 point "
                       f"({_runs(best['runs'])}) against {cash(worst['cost_per_map50_point'])} "
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
            "basis": "saving = the cost of the capacity nobody held (GPU time and energy), if the pool shrinks by it",
            "title": "Use or give back idle capacity",
            "detail": f"{un['gpu_hours']:,.1f} GPU-hours unallocated. The host with the largest unallocated cost is "
                      f"{host['hostname']} ({host['gpu_model']}): {cash(host['cents'])} of GPU time, "
                      f"{host['unallocated_gpu_hours']:,.1f} GPU-hours, {(host['share'] or 0) * 100:.0f} % of its "
                      f"capacity{other}. Shrink the pool or lend it out."}


def _smaller_gpu(report: dict, project: str | None, cents, cash) -> dict | None:
    """Jobs that would fit a cheaper, smaller GPU (yolocost.report.gpufit): the admins' from
    the section gpu_fit, a project's from its job table's notes."""
    if project is None:
        fit = report.get("gpu_fit") or {}
        jobs, amount, hours = fit.get("jobs") or 0, fit.get("saving"), fit.get("gpu_hours")
        first = (fit.get("rows") or [None])[0]
        section = "gpu_fit"
    else:
        table = report.get("jobs") or {}
        fitting = [j for j in table.get("rows", []) if j.get("fits")]
        jobs, amount = table.get("fit_jobs") or 0, table.get("fit_saving")
        hours = sum((Decimal(j["gpu_hours"]) for j in fitting), Decimal("0.0"))
        first = max(fitting, key=lambda j: j["fits"]["saving"], default=None)
        section = "jobs"
    if not jobs or not first:
        return None
    best = first["fit"] if project is None else first["fits"]
    many = jobs > 1
    return {"section": section, "amount": cents(amount),
            "basis": f"saving = for each of the {jobs} job{'s' if many else ''}, the price difference per GPU-hour "
                     f"to the cheapest smaller GPU that holds its peak memory with {(1 - gpufit.FIT_MARGIN) * 100:.0f} % to spare "
                     f"x its GPU-hours "
                     f"(an estimate: a job may train slower there)",
            "title": f"Run {jobs} job{'s' if many else ''} on the smaller GPU{'s' if many else ''} they fit",
            "detail": f"They held {Decimal(hours or 0):,.1f} GPU-hours. The largest saving is {first['job_id']}: "
                      f"{best['model']} would have cost {cash(best['saving'])} less."}
