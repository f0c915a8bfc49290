"""Write a Prometheus sample of the synthetic cluster: OpenMetrics plus the expected raw tables.

`write_prometheus_sample()` picks a few hosts of a planned month (scenario.py), writes what
their exporters and the cluster's kube-state-metrics and training runners exposed during a
window starting at a local midnight as `metrics.om` (openmetrics.py), the raw tables a perfect ingest
of that window must produce (expected.py), a config for ingesting it, and `scenario.json`:
which host shows which attribution mode, the window and the special cases, for tests.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from . import expected, tables
from .constants import DEMO_CLUSTER, DEMO_MONTH, DEMO_SEED, DEMO_TIMEZONE, GRAIN_SECONDS, SAMPLE_SECONDS
from .generate import METRICS
from .openmetrics import DCGM_JOB, JOB_ID_LABEL, KSM_JOB, RUNNER_JOB, write_openmetrics
from .plan import plan_month
from .prices import DEMO_ENERGY_PRICES, DEMO_PRICES
from .scenario import (DEFAULT_HOSTS, DEFAULT_START_DAY, HOSTNAME_LABEL, LEAD_SLOTS, MODES, SERVED_SCRAPES,
                       TAIL_SLOTS, HostChoice, Scenario, build_scenario)
from .window import iso_utc

SAMPLE_FILES = {
    "metrics": "metrics.om",
    "gpu_usage": "gpu_usage.parquet",
    "jobs": "jobs.parquet",
    "training_progress": "training_progress.parquet",
    "job_results": "job_results.parquet",
    "config": "yolocost.toml",
    "scenario": "scenario.json",
}


@dataclass(frozen=True)
class PrometheusSample:
    """What `write_prometheus_sample` wrote."""

    out_dir: Path
    files: dict[str, Path]  # keys of SAMPLE_FILES
    start: int  # window [start, end), epoch seconds (a local midnight; the end one unless `hours`)
    end: int
    series: int  # series in metrics.om
    samples: int  # sample lines in metrics.om
    usage_rows: int
    jobs: int
    scenario: dict  # the content of scenario.json


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def config_text(cluster: str, timezone: str) -> str:
    lines = [
        "# Ingest configuration for the synthetic Prometheus sample (written by the generator).",
        "# Tests point [prometheus] url at their own server.",
        "",
        "[cluster]",
        f"name = {_toml_str(cluster)}",
        f"timezone = {_toml_str(timezone)}",
        'currency = "USD"',
        "",
        "[ingest]",
        f"grain_seconds = {GRAIN_SECONDS}",
        "",
        "[labels]",
        f"job_id = {_toml_str(JOB_ID_LABEL)}",
        "",
        "[prometheus]",
        'url = "http://127.0.0.1:9090"',
    ]
    for p in DEMO_PRICES:
        lines += ["", "[[prices]]", f"gpu_model = {_toml_str(p['gpu_model'])}",
                  f"effective_from = {p['effective_from']}",
                  f"price_per_gpu_hour = {_toml_str(p['price_per_gpu_hour'])}"]
    for p in DEMO_ENERGY_PRICES:
        lines += ["", "[[energy_prices]]", f"effective_from = {p['effective_from']}",
                  f"price_per_kwh = {_toml_str(p['price_per_kwh'])}"]
    return "\n".join(lines) + "\n"


def _scenario_json(sc: Scenario, series_per_device: dict[str, int], usage) -> dict:
    hosts = []
    for c in sc.hosts:
        devs = [d for d in sc.devices if d.phys.choice.host == c.host]
        hosts.append({
            "host": c.host, "mode": c.mode, "mode_means": MODES[c.mode], "gpus": list(c.gpus),
            "gpu_model": sc.host_objs[c.host].kind.name,
            "hostname_label": HOSTNAME_LABEL[c.mode],
            "scrape_job": DCGM_JOB.get(c.mode, "dcgm-exporter"), "instance": f"{c.host}:9400",
            "offset_ms": int(sc.timestamps[f"dcgm:{c.host}"][0]),
            "devices": [{"gpu": d.phys.gpu.index, "uuid": d.phys.gpu.uuid, "gpu_uuid": d.gpu_uuid,
                         "mig_profile": d.mig_profile, "gpu_i_id": d.instance,
                         "util_metric": "DCGM_FI_PROF_GR_ENGINE_ACTIVE" if d.instance else "DCGM_FI_DEV_GPU_UTIL",
                         "series": series_per_device[d.gpu_uuid],
                         "samples": int(d.phys.present[sc.first_slot:].sum())} for d in devs],
        })
    specials = json.loads(json.dumps(sc.specials))
    held = set(usage["owner"][usage["owner"] >= 0].tolist())
    jobs = {o.job_id: {"mode": o.mode, "host": o.host, "plan_job": o.plan is not None,
                       "plan_image_tag": o.image_tag, **{k: v for k, v in expected.derived_labels(o).items()
                                                         if k in ("image_tag", "image_digest")}}
            for o in sorted(sc.owners.values(), key=lambda o: o.job_id) if o.code in held}
    return {
        "seed": sc.seed, "month": sc.plan.window.month, "timezone": sc.plan.window.timezone, "cluster": sc.cluster,
        "start": sc.start, "end": sc.end, "start_utc": iso_utc(sc.start), "end_utc": iso_utc(sc.end),
        "data_start": sc.data_start, "lead_slots": LEAD_SLOTS, "tail_slots": TAIL_SLOTS,
        "grain_seconds": GRAIN_SECONDS, "scrape_interval_seconds": SAMPLE_SECONDS,
        "served_scrapes": SERVED_SCRAPES, "job_id_label": JOB_ID_LABEL,
        "scrape_jobs": {"runner": RUNNER_JOB, "kube_state_metrics": KSM_JOB,
                        "not_honoring_labels": sorted(set(DCGM_JOB.values()))},
        "hosts": hosts, "specials": specials, "jobs": jobs,
        "notes": {
            "energy": "a sample whose previous sample is more than 5 minutes back has no energy delta",
            "shares": "a sample held by n owners gives each 1/n of seconds, busy, idle and energy; "
                      "util and power means are weighted by those shares",
            "jobs": "start_time: start of the first interval held in the window; end_time: end of the last one, "
                    "null when that is the window's last interval; gpu_request, epochs, imgsz, batch from "
                    "yolocost_job_info; gpu_request otherwise the most GPUs held in one interval",
            "power_mean_w": "rounded to 3 decimals",
        },
        "usage_rows": len(usage),
    }


def write_prometheus_sample(
    out_dir,
    *,
    seed: int = DEMO_SEED,
    month: str = DEMO_MONTH,
    timezone: str = DEMO_TIMEZONE,
    cluster: str = DEMO_CLUSTER,
    start_day: int = DEFAULT_START_DAY,
    days: int = 3,
    hours: int = 0,
    hosts: Sequence[HostChoice] = DEFAULT_HOSTS,
    progress: Callable[[str], None] | None = None,
) -> PrometheusSample:
    """Write metrics.om, the expected raw tables, yolocost.toml and scenario.json into out_dir.

    The window is `days` whole local days from day `start_day` of the month (0 = the 1st),
    and `hours` more: the planned data end with the day after the month, so a window into
    that day (across the month's end) ends before its midnight.
    """
    say = progress or (lambda _msg: None)
    if days < 1 or not 0 <= hours < 24:
        raise ValueError("days must be at least 1 and hours from 0 to 23")
    t0 = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {k: out / v for k, v in SAMPLE_FILES.items()}
    plan = plan_month(seed, month, timezone, 1.0)
    start, end = plan.window.local(start_day, 0), plan.window.local(start_day + days, hours)
    sc = build_scenario(plan, cluster=cluster, start=start, end=end, hosts=hosts)
    say(f"{len(sc.devices)} GPUs/MIG instances on {len(sc.hosts)} hosts, {iso_utc(start)} to {iso_utc(end)}")

    w = write_openmetrics(sc, files["metrics"])
    say(f"wrote {w.samples:,} samples of {w.series:,} series ({files['metrics'].stat().st_size / 1e6:.0f} MB)")

    usage = expected.usage_frame(sc)
    tables.write(files["gpu_usage"], expected.usage_table(usage))
    jobs = expected.jobs_table(sc, usage)
    tables.write(files["jobs"], jobs)
    tables.write(files["training_progress"], expected.progress_table(sc, METRICS))
    tables.write(files["job_results"], expected.results_table(sc))
    files["config"].write_text(config_text(cluster, timezone), encoding="utf-8")
    scenario = _scenario_json(sc, w.series_per_device, usage)
    files["scenario"].write_text(json.dumps(scenario, ensure_ascii=False, indent=1, sort_keys=True) + "\n",
                                 encoding="utf-8")
    say(f"expected: {len(usage):,} usage rows, {jobs.num_rows} jobs ({time.perf_counter() - t0:.1f} s)")
    return PrometheusSample(out, files, start, end, w.series, w.samples, len(usage), jobs.num_rows, scenario)
