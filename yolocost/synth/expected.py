"""The raw tables a perfect ingest of a Prometheus sample must produce.

Computed from the scenario sample by sample, following docs/prometheus-inputs.md and
sharing no code with the ingest:

* a sample belongs to the grain interval holding its slot (the sample at slot start + offset
  belongs to the interval holding the slot start, which is the interval holding the sample);
* an owner of a sample shared by n owners gets 1/n of it: seconds, busy and idle seconds and
  energy; util_mean and power_mean_w are means weighted by those shares; mem_peak_mib is the
  max over the owner's samples;
* energy: the physical GPU's counter differenced sample to sample (a drop is a reset, the
  delta is then the new value); a sample whose previous sample lies more than 5 minutes back
  (an exporter outage, or the first sample of the data) has no delta, because an ingest
  looking back 5 minutes cannot see the previous one; each delta is split equally over the
  MIG instances of the GPU (all present together) and within an instance over its owners;
  each row's energy is rounded half up to whole mJ;
* util_mean as computed; power_mean_w rounded to 3 decimals (as grain.py);
* jobs: what the labels let an ingest derive (see `derived_labels`); gpu_request where no
  label gives it: the most GPUs (or MIG instances) the job held in one interval;
  start_time the start of the first interval the job held a GPU in the window, end_time the
  end of the last one, NULL when that is the window's last interval (still running).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from . import tables
from .constants import BUSY_UTIL, GRAIN_SECONDS, IDLE_UTIL, SAMPLE_SECONDS
from .grain import counter_deltas
from .scenario import K8S_MODES, MAX_DELTA_SLOTS, Owner, Scenario
from .yolo import IMGSZ

SECONDS_COLUMNS = ("seconds_present", "seconds_busy", "seconds_idle")
SECONDS_TYPE = pa.decimal128(12, 6)
# gpu_usage with the seconds as DECIMAL(12,6) (the raw table's type): a shared sample gives 15 s
USAGE_SCHEMA = pa.schema(
    [pa.field(f.name, SECONDS_TYPE) if f.name in SECONDS_COLUMNS else f for f in tables.GPU_USAGE]
)


def energy_deltas(present: np.ndarray, counter: np.ndarray) -> np.ndarray:
    """Delta per slot (0 where absent or where the previous sample is beyond the lookback)."""
    k = np.flatnonzero(present)
    d = counter_deltas(counter[k]).astype(np.float64)
    if len(k):
        far = np.concatenate([[True], np.diff(k) > MAX_DELTA_SLOTS])
        d[far] = 0.0
    out = np.zeros(len(present))
    out[k] = d
    return out


def usage_frame(sc: Scenario) -> pd.DataFrame:
    """Expected gpu_usage rows, sorted by interval, host, GPU and owner (unallocated first)."""
    parts = []
    first = sc.first_slot
    instances: dict[str, int] = {}
    for d in sc.devices:
        instances[d.phys.gpu.uuid] = instances.get(d.phys.gpu.uuid, 0) + 1
    deltas = {p.gpu.uuid: energy_deltas(p.present, p.counter) for p in sc.physicals}
    for i, d in enumerate(sc.devices):
        p = d.phys
        live = p.present.copy()
        live[:first] = False
        a, b = d.owner_a, d.owner_b
        n_owners = np.maximum((a >= 0).astype(int) + (b >= 0).astype(int), 1)
        util = d.util * 100.0 if d.instance is not None else d.util  # GR_ENGINE_ACTIVE x 100
        energy = deltas[p.gpu.uuid] / instances[p.gpu.uuid]
        for col, mask in ((a, live & ((a >= 0) | (b < 0))), (b, live & (b >= 0))):
            k = np.flatnonzero(mask)
            if not len(k):
                continue
            w = 1.0 / n_owners[k]
            u = util[k]
            parts.append(pd.DataFrame({
                "device": i,
                "interval": (sc.data_start + SAMPLE_SECONDS * k) // GRAIN_SECONDS * GRAIN_SECONDS,
                "owner": col[k],
                "w": w,
                "wu": w * u,
                "busy": w * (u > BUSY_UTIL),
                "idle": w * (u < IDLE_UTIL),
                "fb": d.fb[k].astype(np.float64),
                "wp": w * p.power[k],
                "e": energy[k] * w,
            }))
    df = pd.concat(parts, ignore_index=True)
    g = df.groupby(["interval", "device", "owner"], sort=True).agg(
        w=("w", "sum"), wu=("wu", "sum"), busy=("busy", "sum"), idle=("idle", "sum"),
        fb=("fb", "max"), wp=("wp", "sum"), e=("e", "sum"),
    ).reset_index()
    dev = sc.devices
    rows = pd.DataFrame({
        "interval_start": g["interval"].astype(np.int64),
        "cluster": sc.cluster,
        "hostname": [dev[i].phys.choice.host for i in g["device"]],
        "gpu_uuid": [dev[i].gpu_uuid for i in g["device"]],
        "gpu_index": [dev[i].phys.gpu.index for i in g["device"]],
        "gpu_model": [dev[i].phys.gpu.kind.name for i in g["device"]],
        "mig_profile": [dev[i].mig_profile for i in g["device"]],
        "job_id": [None if o < 0 else sc.owners[int(o)].job_id for o in g["owner"]],
        "seconds_present": SAMPLE_SECONDS * g["w"],
        "util_mean": g["wu"] / g["w"],
        "seconds_busy": SAMPLE_SECONDS * g["busy"],
        "seconds_idle": SAMPLE_SECONDS * g["idle"],
        "mem_peak_mib": g["fb"],
        "power_mean_w": np.round(g["wp"] / g["w"], 3),
        "energy_mj": np.floor(g["e"] + 0.5).astype(np.int64),
        "owner": g["owner"].astype(np.int64),
    })
    rows["_null_last"] = rows["job_id"].isna().map({True: 0, False: 1})
    rows = rows.sort_values(["interval_start", "hostname", "gpu_uuid", "_null_last", "job_id"], kind="stable")
    return rows.drop(columns="_null_last").reset_index(drop=True)


def usage_table(rows: pd.DataFrame) -> pa.Table:
    arrays = []
    for f in USAGE_SCHEMA:
        col = rows[f.name]
        if f.name == "interval_start":
            arrays.append(tables.timestamps_np(col.to_numpy()))
        elif f.name in SECONDS_COLUMNS:
            # multiples of 15 s (a sample shared by two owners): exact in binary and in DECIMAL(12,6)
            arrays.append(pa.array(col.to_numpy(np.float64), pa.float64()).cast(SECONDS_TYPE))
        else:
            arrays.append(pa.array([None if pd.isna(v) else v for v in col.tolist()], f.type))
    return pa.Table.from_arrays(arrays, schema=USAGE_SCHEMA)


def derived_labels(o: Owner) -> dict:
    """The job columns an ingest can derive from what the sample exposes for this owner."""
    if o.mode in K8S_MODES:
        # image `repo:tag`, `repo@sha256:...` (digest-only) or `repo` (an empty tag: the runtime pulls latest)
        tag = "latest" if o.image_tag == "" else o.image_tag
        return dict(image_tag=tag, image_digest=o.image_digest, gpu_request=None, epochs=None, imgsz=None, batch=None)
    digest = o.image_digest if o.digest_label else None
    if o.image_tag:
        tag = o.image_tag
    else:  # no image_tag label: digest-only when a digest is known, else the empty tag
        tag = None if digest else ""
    return dict(image_tag=tag, image_digest=digest, gpu_request=o.gpu_request, epochs=o.epochs,
                imgsz=IMGSZ if o.plan is not None else None, batch=o.batch)


def jobs_table(sc: Scenario, usage: pd.DataFrame) -> pa.Table:
    held = usage[usage["owner"] >= 0]
    span = held.groupby("owner").agg(first=("interval_start", "min"), last=("interval_start", "max"),
                                     model=("gpu_model", "first"))
    most = held.groupby(["owner", "interval_start"])["gpu_uuid"].nunique().groupby("owner").max()
    last_interval = sc.end - GRAIN_SECONDS
    rows = []
    for code, r in span.iterrows():
        o = sc.owners[int(code)]
        derived = derived_labels(o)
        if derived["gpu_request"] is None:  # no label says: the most GPUs it held at once
            derived["gpu_request"] = int(most[code])
        rows.append(dict(
            job_id=o.job_id, cluster=sc.cluster, project=o.project, user_name=o.user, model_type=o.model_type,
            gpu_model=r["model"], start_time=int(r["first"]),
            end_time=None if r["last"] >= last_interval else int(r["last"]) + GRAIN_SECONDS, **derived,
        ))
    rows.sort(key=lambda r: r["job_id"])
    arrays = [
        tables.timestamps([r[f.name] for r in rows]) if f.type == tables.TS
        else pa.array([r[f.name] for r in rows], f.type)
        for f in tables.JOBS
    ]
    return pa.Table.from_arrays(arrays, schema=tables.JOBS)


def reported_epochs(sc: Scenario, o: Owner) -> np.ndarray:
    """Indices of the owner's epochs that ended inside the window."""
    if o.plan is None:
        return np.zeros(0, np.int64)
    ts = o.plan.epoch_ts
    return np.flatnonzero((ts >= sc.start) & (ts < sc.end))


def finished_in_window(sc: Scenario, o: Owner) -> bool:
    j = o.plan
    return j is not None and j.finished and j.end_time is not None and sc.start <= j.end_time < sc.end


def progress_table(sc: Scenario, metrics: tuple[str, ...]) -> pa.Table:
    order = sorted(range(len(metrics)), key=lambda i: metrics[i])
    ids, ts, epoch, name, value = [], [], [], [], []
    for code in sorted(sc.owners, key=lambda c: sc.owners[c].job_id):
        o = sc.owners[code]
        for e in reported_epochs(sc, o):
            values = epoch_values(o, int(e))
            assert o.plan is not None  # an owner with reported epochs is a planned job
            for i in order:
                ids.append(o.job_id)
                ts.append(int(o.plan.epoch_ts[e]))
                epoch.append(int(e) + 1)
                name.append(metrics[i])
                value.append(values[i])
    return pa.Table.from_arrays(
        [pa.array(ids, pa.string()), tables.timestamps(ts), pa.array(epoch, pa.int32()),
         pa.array(name, pa.string()), pa.array(value, pa.float64())],
        schema=tables.TRAINING_PROGRESS,
    )


def epoch_values(o: Owner, e: int) -> list[float]:
    """The results.csv values of epoch index e, in generate.METRICS order."""
    assert o.plan is not None
    c = o.plan.curves
    return [float(v) for v in c.losses[e]] + [float(c.map50[e]), float(c.map50_95[e])]


def result_values(o: Owner) -> dict[str, float]:
    assert o.plan is not None
    c = o.plan.curves
    b = c.best_epoch
    return {"map50": float(c.map50[b - 1]), "map50_95": float(c.map50_95[b - 1]), "best_epoch": b}


def results_table(sc: Scenario) -> pa.Table:
    done = sorted((o for o in sc.owners.values() if finished_in_window(sc, o)), key=lambda o: o.job_id)
    res = [result_values(o) for o in done]
    return pa.Table.from_arrays(
        [pa.array([o.job_id for o in done], pa.string()),
         pa.array([r["map50"] for r in res], pa.float64()),
         pa.array([r["map50_95"] for r in res], pa.float64()),
         pa.array([r["best_epoch"] for r in res], pa.int32())],
        schema=tables.JOB_RESULTS,
    )
