"""A run's GPU-hours and cost before it starts, from the finished runs the database holds.

The history is the named query `queries/estimate_inputs.sql` (one row per finished job: an
end time and GPU-seconds > 0, with its labels, GPU model and count, image size, batch, epochs
trained and mAP50); `yolocost query estimate_inputs` shows the same rows this module reads.

Comparable runs, widest last; the first level with at least 3 runs is used (fewer than 3
even at the widest: its runs, with a note; none: no estimate):

1. `exact`: the same model type and every option the request gives (image tag, GPU model,
   GPU count, image size, batch, project);
2. `model_type`: the same model type on the same GPU model and GPU count (when given), any
   image tag, image size, batch and project;
3. `family`: the same family (the model type without its size letter: yolov8m -> yolov8,
   yolo11s -> yolo11), on the same GPU model and GPU count (when given).

Epochs are never matched but scaled, and so are image sizes where they differ: a run's
GPU-hours and energy count x (requested epochs / epochs it trained) x (requested image size /
its image size)^2, as compute grows with the pixels of an image. An option the request
leaves out is neither matched nor scaled (a run counts as it ran). A run of unknown image
size is left out when the request gives one.

Each comparable run so scaled is priced as if it ran now: GPU-hours x the price of its GPU
model in effect today (the config's price table, then its default price; a model with
neither is an error), plus kWh x the energy price in effect today where one is configured.
The central value is the median of the scaled runs; the range:

* 9 runs or more: the 10th and 90th percentiles with the k-th smallest of n runs taken as the
  k/(n+1) quantile (Hyndman and Fan's type 6, linear between runs). A further run from the
  same population falls inside with probability 0.8 whatever its distribution; the usual
  (n-1)p+1 positions give a narrower range that holds a new run less often;
* 2 to 8 runs: too few for the 10th percentile to lie between runs, so the 80 % prediction
  interval of a log-normal fitted to them: exp(mean +- t(0.9, n-1) x sd x sqrt(1 + 1/n)) of
  the logarithms (GPU-hours multiply with dataset size, GPU speed and epochs);
* 1 run: that run's figure, without a range (a note says so).

mAP50 of the comparison is the mean over its runs with a final validation. The cheapest
comparable configuration per mAP50 point is taken among the runs of the same family on any
GPU model and GPU count, grouped by model type, GPU model, GPU count and image size: its
expected cost is the median of its runs priced now and scaled to the requested epochs (not
image size: that is part of the configuration, and of its mAP), divided by its mean mAP50 x
100.

Money is Decimal throughout; it is rounded to the currency's minor unit only for output.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import statistics
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Sequence, cast

import duckdb

from . import db, months
from .config import Config
from .errors import YolocostError
from .money import Currency
from .queries import read_sql
from .resources import shipped_dir
from .tables import aligned, column_widths, json_text

QUERY = "estimate_inputs"
MIN_RUNS = 3  # fewer comparable runs widen the comparison
PERCENTILE_RUNS = 9  # from here on the 10th percentile lies between runs (0.1 x (n + 1) >= 1)
LEVELS = ("exact", "model_type", "family")
LEVEL_TEXT = {
    "exact": "the same model type and every option given",
    "model_type": "the same model type and hardware (any image tag, image size, batch, project)",
    "family": "the same model family and hardware (any model size, image tag, image size, batch, project)",
}
# one-sided 90 % quantile of Student's t with 1..7 degrees of freedom (80 % two-sided)
T90 = {1: Decimal("3.0777"), 2: Decimal("1.8856"), 3: Decimal("1.6377"), 4: Decimal("1.5332"),
       5: Decimal("1.4759"), 6: Decimal("1.4398"), 7: Decimal("1.4149")}
_CTX = decimal.Context(prec=34)
MJ_PER_KWH = Decimal(3_600_000_000)
OPTIONS = ("image_tag", "gpu_model", "gpus", "imgsz", "batch", "project")


@dataclass(frozen=True)
class Request:
    """What a submitter knows before the run; all but the model type optional."""

    model_type: str
    image_tag: str | None = None
    gpu_model: str | None = None
    gpus: int | None = None
    epochs: int | None = None
    imgsz: int | None = None
    batch: int | None = None
    project: str | None = None

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class Run:
    """One finished job of the history (a row of estimate_inputs)."""

    job_id: str
    project: str | None
    model_type: str
    image_tag: str | None
    gpu_model: str | None
    gpus: int | None
    imgsz: int | None
    batch: int | None
    epochs: int | None  # trained
    gpu_seconds: Decimal
    energy_mj: int
    map50: float | None


@dataclass(frozen=True)
class Priced:
    """A comparable run scaled to the request and priced now."""

    run: Run
    factor: Decimal
    gpu_hours: Decimal
    energy_kwh: Decimal
    cost: Decimal


@dataclass(frozen=True)
class Spread:
    low: Decimal
    central: Decimal
    high: Decimal


@dataclass(frozen=True)
class Alternative:
    """The configuration with the lowest expected cost per mAP50 point."""

    model_type: str
    gpu_model: str | None
    gpus: int | None
    imgsz: int | None
    runs: int
    cost: Decimal
    map50: float
    cost_per_map50_point: Decimal
    same_as_request: bool


@dataclass(frozen=True)
class Estimate:
    request: Request
    currency: str
    as_of: dt.date
    level: str | None  # None: no comparable run at all
    levels: tuple[tuple[str, int], ...]  # (level, comparable runs) in the order tried
    runs: tuple[Priced, ...] = ()
    gpu_hours: Spread | None = None
    cost: Spread | None = None
    energy_kwh: Decimal | None = None  # central
    range_method: str = ""
    map50: float | None = None
    cost_per_map50_point: Decimal | None = None
    alternative: Alternative | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def found(self) -> bool:
        return self.level is not None


# --------------------------------------------------------------------------- history


def query_sql() -> str:
    """The named query's text: the one definition of the history."""
    return read_sql(shipped_dir("queries") / f"{QUERY}.sql")


def load_history(con: duckdb.DuckDBPyConnection) -> list[Run]:
    """The finished runs, as the named query estimate_inputs gives them."""
    with db.models_needed("yolocost estimate"):
        cur = con.execute(query_sql())
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
    return [Run(r["job_id"], r["project"], r["model_type"], r["image_tag"], r["gpu_model"], r["gpus"], r["imgsz"],
                r["batch"], r["epochs_trained"], Decimal(r["gpu_seconds"]), int(r["energy_mj"] or 0), r["map50"])
            for r in rows]


def family(model_type: str) -> str:
    """The model type without its size letter: yolov8m -> yolov8, yolo11s-tuned -> yolo11."""
    m = re.match(r"^(.*?\d+)[nsmlx](?=$|[-_.])", model_type, re.I)
    return m.group(1) if m else model_type


# --------------------------------------------------------------------------- prices


def gpu_price(config: Config, gpu_model: str | None, today: dt.date) -> Decimal:
    """Price of one GPU-hour of the model in effect on `today` (local date), else the default."""
    entries = [p for p in config.prices if p.gpu_model == gpu_model and p.effective_from <= today]
    if entries:
        return max(entries, key=lambda p: p.effective_from).price_per_gpu_hour
    if config.default_price_per_gpu_hour is not None:
        return config.default_price_per_gpu_hour
    where = config.source or "the config"
    raise YolocostError(f"no price for GPU model {gpu_model!r} in effect on {today} in {where}: add a [[prices]] "
                        "entry or [pricing] default_price_per_gpu_hour")


def energy_price(config: Config, today: dt.date) -> Decimal:
    """Price of one kWh in effect on `today`; 0 without energy prices (energy is then not charged)."""
    entries = [e for e in config.energy_prices if e.effective_from <= today]
    return max(entries, key=lambda e: e.effective_from).price_per_kwh if entries else Decimal(0)


# --------------------------------------------------------------------------- the estimate


def estimate(con: duckdb.DuckDBPyConnection, config: Config, request: Request, now: dt.datetime) -> Estimate:
    """The estimate for `request` from the database's finished runs, priced as of `now`."""
    return estimate_from(load_history(con), config, request, now)


def estimate_from(history: Sequence[Run], config: Config, request: Request, now: dt.datetime) -> Estimate:
    """The estimate from a given history (the database's, or part of it)."""
    _check(request)
    today = now.astimezone(config.tz).date()
    levels: list[tuple[str, int]] = []
    pool: list[Run] = []
    level = None
    for name in LEVELS:
        candidates = [r for r in history if _matches(r, request, name)]
        levels.append((name, len(candidates)))
        if candidates:
            pool, level = candidates, name
        if len(candidates) >= MIN_RUNS:
            break
    notes = []
    if level is None:
        return Estimate(request, config.currency, today, None, tuple(levels), notes=(_no_history(request),))
    if len(pool) < MIN_RUNS:
        notes.append(f"only {len(pool)} comparable run{'s' if len(pool) > 1 else ''} even at the widest level, "
                     f"{level}: the estimate is rough")
    elif level != "exact":
        fewer = ", ".join(f"{lv} {n}" for lv, n in levels[:-1])
        notes.append(f"fewer than {MIN_RUNS} comparable runs at the narrower level{'s' if len(levels) > 2 else ''} "
                     f"({fewer}): widened to {level}, {LEVEL_TEXT[level]}")
    eprice = energy_price(config, today)
    priced = [_price(r, request, config, today, eprice, imgsz=True) for r in pool]
    hours = spread([p.gpu_hours for p in priced])
    cost = spread([p.cost for p in priced])
    method = _method(len(priced))
    if len(priced) == 1:
        notes.append("one comparable run: no range (low = central = high)")
    maps = [p.run.map50 for p in priced if p.run.map50 is not None]
    map50 = statistics.fmean(maps) if maps else None
    cpm = _per_point(cost.central, map50)
    alternative = _cheapest(history, request, config, today, eprice)
    return Estimate(request, config.currency, today, level, tuple(levels), tuple(priced), hours, cost,
                    _median([p.energy_kwh for p in priced]), method, map50, cpm, alternative, tuple(notes))


def _check(request: Request) -> None:
    if not request.model_type or not request.model_type.strip():
        raise YolocostError("--model-type is required (e.g. yolov8m)")
    for name in ("gpus", "epochs", "imgsz", "batch"):
        value = getattr(request, name)
        if value is not None and value < 1:
            raise YolocostError(f"--{name}: {value} is not a whole number above 0")


def _matches(run: Run, request: Request, level: str) -> bool:
    if level == "family":
        if family(run.model_type) != family(request.model_type):
            return False
    elif run.model_type != request.model_type:
        return False
    fixed = OPTIONS if level == "exact" else ("gpu_model", "gpus")
    for name in fixed:
        wanted = getattr(request, name)
        if wanted is not None and getattr(run, name) != wanted:
            return False
    if request.imgsz is not None and run.imgsz is None:
        return False  # cannot be scaled to the requested image size
    return bool(run.epochs) or request.epochs is None


def _factor(run: Run, request: Request, imgsz: bool) -> Decimal:
    factor = Decimal(1)
    if request.epochs is not None and run.epochs:
        factor = _CTX.multiply(factor, _CTX.divide(Decimal(request.epochs), Decimal(run.epochs)))
    if imgsz and request.imgsz is not None and run.imgsz:
        ratio = _CTX.divide(Decimal(request.imgsz), Decimal(run.imgsz))
        factor = _CTX.multiply(factor, _CTX.multiply(ratio, ratio))
    return factor


def _price(run: Run, request: Request, config: Config, today: dt.date, eprice: Decimal, imgsz: bool) -> Priced:
    factor = _factor(run, request, imgsz)
    hours = _CTX.multiply(_CTX.divide(run.gpu_seconds, Decimal(3600)), factor)
    kwh = _CTX.multiply(_CTX.divide(Decimal(run.energy_mj), MJ_PER_KWH), factor)
    cost = _CTX.add(_CTX.multiply(hours, gpu_price(config, run.gpu_model, today)), _CTX.multiply(kwh, eprice))
    return Priced(run, factor, hours, kwh, cost)


def _method(n: int) -> str:
    if n >= PERCENTILE_RUNS:
        return "10th-90th percentile of the runs (type 6: the k-th of n runs is the k/(n+1) quantile)"
    if n >= 2:
        return "80 % log-normal prediction interval (fewer than 9 runs)"
    return "one run: no range"


def _quantile(values: Sequence[Decimal], p: Decimal) -> Decimal:
    """Hyndman and Fan type 6: position p x (n + 1) among the sorted values, linear between
    them, clamped to the smallest and largest."""
    xs = sorted(values)
    h = _CTX.multiply(p, Decimal(len(xs) + 1))
    if h <= 1:
        return xs[0]
    if h >= len(xs):
        return xs[-1]
    k = int(h)
    return _CTX.add(xs[k - 1], _CTX.multiply(h - k, _CTX.subtract(xs[k], xs[k - 1])))


def _median(values: Sequence[Decimal]) -> Decimal:
    return _quantile(values, Decimal("0.5"))


def spread(values: Sequence[Decimal]) -> Spread:
    """Central value and 80 % range of the scaled runs' figures (see the module docstring)."""
    central = _median(values)
    n = len(values)
    if n >= PERCENTILE_RUNS:
        return Spread(_quantile(values, Decimal("0.1")), central, _quantile(values, Decimal("0.9")))
    if n == 1 or any(v <= 0 for v in values):
        return Spread(min(values), central, max(values))
    logs = [v.ln(_CTX) for v in values]
    mean = _CTX.divide(sum(logs, Decimal(0)), Decimal(n))
    var = _CTX.divide(sum((_CTX.power(x - mean, 2) for x in logs), Decimal(0)), Decimal(n - 1))
    half = _CTX.multiply(_CTX.multiply(T90[n - 1], var.sqrt(_CTX)), (1 + _CTX.divide(Decimal(1), Decimal(n))).sqrt(_CTX))
    return Spread(_CTX.exp(mean - half), central, _CTX.exp(mean + half))


def _per_point(cost: Decimal, map50: float | None) -> Decimal | None:
    if map50 is None or map50 <= 0:
        return None
    return _CTX.divide(cost, _CTX.multiply(Decimal(repr(map50)), Decimal(100)))


def _cheapest(history: Sequence[Run], request: Request, config: Config, today: dt.date,
              eprice: Decimal) -> Alternative | None:
    """Among the runs of the request's family with a final mAP50, the configuration (model
    type, GPU model, GPU count, image size) with the lowest expected cost per mAP50 point."""
    groups: dict[tuple[str, str | None, int | None, int | None], list[Run]] = {}
    for run in history:
        if family(run.model_type) == family(request.model_type) and run.map50 is not None and run.map50 > 0 \
                and (run.epochs or request.epochs is None):
            groups.setdefault((run.model_type, run.gpu_model, run.gpus, run.imgsz), []).append(run)
    best = None
    for key in sorted(groups, key=lambda k: tuple("" if v is None else str(v) for v in k)):
        runs = groups[key]
        cost = _median([_price(r, request, config, today, eprice, imgsz=False).cost for r in runs])
        map50 = statistics.fmean(cast(float, r.map50) for r in runs)  # each > 0 (the groups')
        per_point = _per_point(cost, map50)
        assert per_point is not None  # map50 > 0
        if best is None or per_point < best.cost_per_map50_point:
            same = all(getattr(request, f) in (None, v) for f, v in zip(("model_type", "gpu_model", "gpus", "imgsz"), key))
            best = Alternative(*key, len(runs), cost, map50, per_point, same)
    return best


def _no_history(request: Request) -> str:
    hardware = ""
    if request.gpu_model or request.gpus:
        hardware = " on " + " x ".join(str(v) for v in (request.gpus, request.gpu_model) if v)
    return (f"no finished run of {request.model_type} or of its family {family(request.model_type)}{hardware} in "
            "the database: no estimate")


# --------------------------------------------------------------------------- output


def _amount(amount: Decimal | None, currency: str) -> str | None:
    """An amount as the estimate prints it, in its table and its JSON alike: the currency's
    display rounding without thousands separators ("1234.57"); None (no estimate) stays None."""
    return None if amount is None else Currency(currency).format(amount, grouped=False)


def _hours(value: Decimal | None) -> float | None:
    return None if value is None else float(round(value, 3))


def varies(est: Estimate) -> dict[str, list]:
    """How the comparable runs differ: each option with more than one value among them."""
    out = {}
    for name in ("model_type",) + OPTIONS + ("epochs",):
        values = {getattr(p.run, name) for p in est.runs}
        if len(values) > 1:
            out["epochs_trained" if name == "epochs" else name] = sorted(
                values, key=lambda v: (v is None, v if isinstance(v, int) else 0, str(v)))
    return out


def to_dict(est: Estimate) -> dict[str, Any]:
    """The estimate for a submission hook: stable keys, money as strings in the minor unit."""
    cur = est.currency
    out: dict[str, Any] = {
        "request": est.request.given(),
        "currency": cur,
        "as_of": est.as_of.isoformat(),
        "found": est.found,
        "message": summary_line(est),
        "level": est.level,
        "levels_tried": [{"level": lv, "runs": n} for lv, n in est.levels],
        "runs": len(est.runs),
        "job_ids": [p.run.job_id for p in est.runs],
        "varies": varies(est),
        "range_method": est.range_method or None,
        "gpu_hours": None,
        "cost": None,
        "energy_kwh": None if est.energy_kwh is None else float(round(est.energy_kwh, 3)),
        "map50": None if est.map50 is None else round(est.map50, 4),
        "cost_per_map50_point": _amount(est.cost_per_map50_point, cur),
        "cheapest_per_map50_point": None,
        "notes": list(est.notes),
    }
    if est.gpu_hours is not None and est.cost is not None:
        out["gpu_hours"] = {k: _hours(getattr(est.gpu_hours, k)) for k in ("low", "central", "high")}
        out["cost"] = {k: _amount(getattr(est.cost, k), cur) for k in ("low", "central", "high")}
    alt = est.alternative
    if alt is not None:
        out["cheapest_per_map50_point"] = {
            "model_type": alt.model_type, "gpu_model": alt.gpu_model, "gpus": alt.gpus, "imgsz": alt.imgsz,
            "runs": alt.runs, "cost": _amount(alt.cost, cur), "map50": round(alt.map50, 4),
            "cost_per_map50_point": _amount(alt.cost_per_map50_point, cur), "same_as_request": alt.same_as_request,
        }
    return out


def to_json(est: Estimate) -> str:
    return json_text(to_dict(est)) + "\n"


def summary_line(est: Estimate) -> str:
    """One line: the range and what it rests on (the bench runner prints it before training)."""
    if not est.found:
        return est.notes[0]
    assert est.cost is not None and est.gpu_hours is not None and est.level is not None  # found
    cur = est.currency
    runs = f"{len(est.runs)} run{'s' if len(est.runs) != 1 else ''}"
    return (f"estimate {_amount(est.cost.low, cur)}-{_amount(est.cost.high, cur)} {cur} (central "
            f"{_amount(est.cost.central, cur)}), {est.gpu_hours.low:.1f}-{est.gpu_hours.high:.1f} "
            f"GPU-hours, from {runs} of {LEVEL_TEXT[est.level].split(' (')[0]}")


def to_table(est: Estimate) -> str:
    """The estimate as a few aligned lines for a terminal."""
    r = est.request
    what = [r.model_type]
    if r.gpu_model or r.gpus:
        what.append(" x ".join(str(v) for v in (r.gpus, r.gpu_model) if v))
    what += [f"{r.epochs} epochs" if r.epochs else "", f"imgsz {r.imgsz}" if r.imgsz else "",
             f"batch {r.batch}" if r.batch else "", f"tag {r.image_tag}" if r.image_tag else "",
             f"project {r.project}" if r.project else ""]
    lines = [f"Estimate for {', '.join(w for w in what if w)} (prices of {est.as_of}, {est.currency})"]
    if not est.found:
        lines.append(est.notes[0])
        return "\n".join(lines) + "\n"
    assert est.level is not None  # found
    cur = est.currency
    rows: list[tuple] = [("", "low", "central", "high"),
            ("GPU-hours", *(f"{_hours(getattr(est.gpu_hours, k)):,.2f}" for k in ("low", "central", "high"))),
            (f"cost ({cur})", *(_amount(getattr(est.cost, k), cur) for k in ("low", "central", "high")))]
    widths = column_widths(rows)
    lines += [aligned(row, widths, (False, True, True, True)) for row in rows]
    lines.append(f"based on {len(est.runs)} run(s) of {LEVEL_TEXT[est.level]}; range: {est.range_method}")
    tried = ", ".join(f"{lv} {n}" for lv, n in est.levels)
    lines.append(f"comparable runs per level: {tried}")
    diff = varies(est)
    if diff:
        lines.append("the runs differ in: " + "; ".join(
            f"{k} {v[0]}..{v[-1]}" if k in ("gpus", "imgsz", "batch", "epochs_trained") else f"{k} ({len(v)} values)"
            for k, v in diff.items()))
    else:
        lines.append("the runs share every option")
    if est.map50 is not None:
        lines.append(f"mean mAP50 {est.map50:.3f}: {_amount(est.cost_per_map50_point, cur)} {cur} per mAP50 point")
    alt = est.alternative
    if alt is not None:
        hw = " x ".join(str(v) for v in (alt.gpus, alt.gpu_model) if v is not None)
        same = " (this configuration)" if alt.same_as_request else ""
        lines.append(f"cheapest per mAP50 point: {alt.model_type} on {hw or 'any GPU'}, imgsz {alt.imgsz or '?'}{same}: "
                     f"{_amount(alt.cost, cur)} {cur}, mAP50 {alt.map50:.3f}, {_amount(alt.cost_per_map50_point, cur)} "
                     f"{cur} per point ({alt.runs} run{'s' if alt.runs != 1 else ''})")
    lines += [f"note: {n}" for n in est.notes]
    return "\n".join(lines) + "\n"


def estimate_database(config: Config, request: Request, now: dt.datetime) -> Estimate:
    """Open the configured database read-only and estimate (the CLI's entry point)."""
    db.require_database(config.database)
    con = db.connect(config.database, read_only=True, sandboxed=True, memory_limit=config.memory_limit)
    try:
        months.check_history(con, config, "yolocost estimate")
        return estimate(con, config, request, now)
    except duckdb.Error as exc:
        raise YolocostError(f"{config.database}: cannot read the history: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()


@dataclass(frozen=True)
class CostLimit:
    """The most a run may cost by its upper estimate (`bench run --max-cost`), with the
    spelling given, which the refusals quote."""

    text: str
    amount: Decimal

    @classmethod
    def parse(cls, text: str, option: str = "--max-cost") -> CostLimit:
        """An amount above 0 (`250`, `99.50`); anything else is one line naming the option."""
        try:
            amount = Decimal(text.strip())
        except decimal.InvalidOperation:
            amount = None
        if amount is None or not amount.is_finite() or amount <= 0:
            raise YolocostError(f"{option}: {text!r} is not an amount above 0 (e.g. 250 or 99.50)")
        return cls(text, amount)


def before_run(config: Config, request: Request, limit: CostLimit | None, now: dt.datetime,
               progress: Callable[[str], None]) -> None:
    """The estimate's line before a run trains, and the check of its cost limit, which raises
    to refuse the run: the upper estimate, rounded to the currency's minor unit as printed,
    above the limit. Without an estimate (no database file, no comparable run, an unreadable
    database) a run with a limit is refused too, as its cost cannot be checked; one without a
    limit trains anyway."""
    refuse = f"not started (leave out --max-cost {limit.text} to train without the check)" if limit else ""
    if not config.database.is_file():
        if limit is not None:
            raise YolocostError(f"--max-cost: no database at {config.database} to estimate the cost from; {refuse}")
        return
    try:
        result = estimate_database(config, request, now)
    except YolocostError as exc:
        if limit is not None:
            raise YolocostError(f"--max-cost: no estimate ({exc}); {refuse}") from None
        progress(f"no estimate: {exc}")
        return
    progress(summary_line(result))
    if limit is None:
        return
    if not result.found:
        raise YolocostError(f"--max-cost: {summary_line(result)}; {refuse}")
    assert result.cost is not None  # found
    shown = Currency(result.currency)
    high = shown.round(result.cost.high)
    if high > limit.amount:
        raise YolocostError(f"the estimated cost is up to {shown.format(high, with_code=True, grouped=False)}, "
                            f"above --max-cost {limit.text}: "
                            "not started")
