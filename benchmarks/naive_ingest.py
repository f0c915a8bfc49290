"""Path (b) of the ingest benchmark: what a user would write with prometheus-api-client.

Raw samples of DCGM_FI_DEV_GPU_UTIL with `get_metric_range_data` (day chunks), a
`MetricRangeDataFrame`, then pandas: per job, GPU-hours = samples x scrape interval / 3600
(each GPU x owner x timestamp once) and density = share of samples with utilization above
the busy threshold. The job is named as `yolocost ingest` names it for Kubernetes pods:
the pod label `[labels] job_id` (from kube_pod_labels) when given, else `<namespace>/<pod>`,
with the exporter's `exported_*` and old `pod_name` spellings understood.

Two things a careful user has to add and this script does: `get_metric_range_data` asks
for `metric[chunk]` at the chunk's end, and Prometheus 2.x ranges include both ends, so a
sample exactly on a chunk boundary comes twice (dropped here), and the last chunk includes
a sample exactly at the window's end (kept out: the window is [start, end)).

Usage: python benchmarks/naive_ingest.py --url URL --start EPOCH --end EPOCH --out FILE.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time

T0 = time.monotonic()

from prometheus_api_client import MetricRangeDataFrame, PrometheusConnect  # noqa: E402
import pandas as pd  # noqa: E402

UTC = dt.timezone.utc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--start", type=int, required=True)
    ap.add_argument("--end", type=int, required=True)
    ap.add_argument("--chunk-hours", type=int, default=24)
    ap.add_argument("--scrape", type=int, default=30)
    ap.add_argument("--busy", type=float, default=70.0)
    ap.add_argument("--job-label", default="", help="pod label naming the job ([labels] job_id), sanitized")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    phases = {"imports_s": time.monotonic() - T0}

    t = time.monotonic()
    start, end = dt.datetime.fromtimestamp(args.start, UTC), dt.datetime.fromtimestamp(args.end, UTC)
    prom = PrometheusConnect(url=args.url, disable_ssl=True)
    data = prom.get_metric_range_data("DCGM_FI_DEV_GPU_UTIL", start_time=start, end_time=end,
                                      chunk_size=dt.timedelta(hours=args.chunk_hours))
    pod_labels = []
    if args.job_label:
        pod_labels = prom.get_metric_range_data("kube_pod_labels", start_time=start, end_time=end,
                                                chunk_size=dt.timedelta(hours=args.chunk_hours))
    phases["fetch_s"] = time.monotonic() - t

    t = time.monotonic()
    df = MetricRangeDataFrame(data)
    rows_fetched = len(df)
    phases["dataframe_s"] = time.monotonic() - t

    t = time.monotonic()
    df = df.reset_index()
    df = df[(df["timestamp"] >= pd.Timestamp(start.replace(tzinfo=None)))
            & (df["timestamp"] < pd.Timestamp(end.replace(tzinfo=None)))]
    col = lambda name: df[name].fillna("") if name in df else pd.Series("", index=df.index)  # noqa: E731
    # owner labels in the order yolocost reads them: exported_*, old names, plain
    exported, old = col("exported_pod"), col("pod_name")
    namespace = col("namespace").where(old == "", col("pod_namespace")).where(exported == "", col("exported_namespace"))
    pod = col("pod").where(old == "", old).where(exported == "", exported)
    df = df.assign(namespace_=namespace, pod_=pod, mig=col("GPU_I_ID"))
    # a scrape that renames pod labels to exported_*: its series' own pod is the exporter's
    exporter_jobs = set(df.loc[exported != "", "job"]) if "job" in df else set()
    renamed = df["job"].isin(exporter_jobs) & (exported == "") if "job" in df else False
    df = df[(df["pod_"] != "") & (col("hpc_job") == "") & ~renamed]
    df["job_id"] = df["namespace_"] + "/" + df["pod_"]
    if args.job_label:
        # the job label from kube_pod_labels, else as copied onto the dcgm series
        names = pd.Series(dtype=object)
        key = f"label_{args.job_label}"
        labels = pd.DataFrame([s["metric"] for s in pod_labels])
        if key in labels:
            named = labels.dropna(subset=[key]).drop_duplicates(["namespace", "pod"])
            names = pd.Series(named[key].values, index=named["namespace"] + "/" + named["pod"])
        copied = df[args.job_label].fillna("") if args.job_label in df else pd.Series("", index=df.index)
        df["job_id"] = df["job_id"].map(names).fillna(copied.where(copied != "")).fillna(df["job_id"])
    df = df.drop_duplicates(["UUID", "mig", "job_id", "timestamp"])
    # jobs a per-sample comparison cannot match as-is: MIG instances, GPUs shared at a sample
    shared = df.groupby(["UUID", "mig", "timestamp"])["job_id"].transform("size") > 1
    odd = set(df.loc[shared | (df["mig"] != ""), "job_id"])
    busy = (df["value"] > args.busy)
    per_job = pd.DataFrame({"samples": df.groupby("job_id").size(),
                            "busy": busy.groupby(df["job_id"]).sum()})
    per_job["gpu_hours"] = per_job["samples"] * args.scrape / 3600
    per_job["density"] = per_job["busy"] / per_job["samples"]
    phases["pandas_s"] = time.monotonic() - t

    out = {
        "phases": phases,
        "rows_fetched": int(rows_fetched),
        "samples": int(len(df)),
        "jobs": {j: {"gpu_hours": float(r.gpu_hours), "density": float(r.density), "samples": int(r.samples)}
                 for j, r in per_job.iterrows()},
        "odd_jobs": sorted(odd),
    }
    with open(args.out, "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
