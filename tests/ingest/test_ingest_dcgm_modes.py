"""dcgm-exporter's labelling modes and late scrape timestamps, through a real (backfilled) Prometheus.

One hour scraped every 30 s, label sets as dcgm-exporter writes them (render_metrics.go,
kubernetes.go). Two groups of series, told apart by a `cluster` label that the configs
select on:

* cluster "new" (default labels, `UUID` and `hostname`), every sample stamped 3 ms before a
  30 s boundary and every tenth one (k = 5, 15, ...) 7 ms after it instead (scraped 10 ms
  late), so that two samples fall into one scrape step and none into the step before:
  - GPU-fff held by pod ml/late all hour (plain path), utilization 90 on even samples and 2
    on odd ones (the late ones are all odd);
  - GPU-eee with no pod, claimed by `yolocost_job_info{job_id="j9"}` all hour (joined path).
* cluster "old" (`--use-old-namespace`: `uuid`, `pod_name`, `pod_namespace`, `container_name`),
  samples on time:
  - GPU-ccc held by pod_name old-a in namespace ml all hour, utilization 90;
  - GPU-ddd with no pod, claimed by `yolocost_job_info{job_id="j7"}` all hour;
  - GPU-hhh with no pod and no claim (unallocated).

By hand (120 samples a series in the window, 30 s each; at 2.00 a GPU-hour):
* ml/late: 3,600 s; busy 60 x 30 = 1,800 s; idle 1,800 s (each stored sample counts once).
* j9: the grain queries decide owners per 30 s step; the 12 late samples share a step with
  the next one, so 12 samples (360 s) cannot be counted: the ingest stops naming GPU-eee, and
  with --allow-uncounted bills 108 x 30 = 3,240 s.
* ml/old-a 3,600 s, j7 3,600 s, GPU-hhh 3,600 s unallocated.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner


SCRAPE, SAMPLES = 30, 120
MODEL = "NVIDIA A100-SXM4-80GB"
METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
           "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")


def _late(k: int) -> bool:
    return k % 10 == 5


def _openmetrics(data_start: dt.datetime) -> str:
    base = data_start.timestamp()

    def new_at(k: int) -> str:  # 3 ms before the boundary, or 7 ms after it when late
        return f"{base + SCRAPE * k + (0.007 if _late(k) else -0.003):.3f}"

    def old_at(k: int) -> str:
        return f"{base + SCRAPE * k + 11.25:.3f}"

    def gpu(uuid_label: str, uuid: str, index: int, host_label: str, cluster: str) -> str:
        return (f'gpu="{index}",{uuid_label}="{uuid}",pci_bus_id="00000000:0{index}:00.0",device="nvidia{index}",'
                f'modelName="{MODEL}",{host_label}="n-{cluster}",DCGM_FI_DRIVER_VERSION="570.86.15",'
                f'instance="n-{cluster}:9400",job="dcgm",cluster="{cluster}"')

    series = [  # labels, time of sample k, utilization of sample k
        (gpu("UUID", "GPU-fff", 0, "hostname", "new") + ',namespace="ml",pod="late",container="train"', new_at,
         lambda k: 90.0 if k % 2 == 0 else 2.0),
        (gpu("UUID", "GPU-eee", 1, "hostname", "new"), new_at, lambda k: 80.0),
        (gpu("uuid", "GPU-ccc", 0, "Hostname", "old") + ',pod_namespace="ml",pod_name="old-a",container_name="t"',
         old_at, lambda k: 90.0),
        (gpu("uuid", "GPU-ddd", 1, "Hostname", "old"), old_at, lambda k: 50.0),
        (gpu("uuid", "GPU-hhh", 2, "Hostname", "old"), old_at, lambda k: 0.0),
    ]
    lines = []
    for name in METRICS:
        for labels, at, util in series:
            for k in range(SAMPLES):
                value = {"DCGM_FI_DEV_GPU_UTIL": util(k), "DCGM_FI_DEV_FB_USED": 1000.0,
                         "DCGM_FI_DEV_POWER_USAGE": 100.0}.get(name, 1e9 + 3_000_000 * k)
                lines.append(f"{name}{{{labels}}} {value:.17g} {at(k)}")
    lines += _virtual_gpu(gpu("UUID", "GPU-vvv", 0, "hostname", "vgpu"), old_at)
    lines += _profiling_paused(gpu("UUID", "GPU-ppp", 0, "hostname", "prof"), old_at)
    lines += _slurm(gpu("UUID", "GPU-sss", 0, "hostname", "slurm"), gpu("UUID", "GPU-mmm", 1, "hostname", "slurm"),
                    old_at)
    for job, uuid, cluster in (("j9", "GPU-eee", "new"), ("j7", "GPU-ddd", "old")):
        labels = (f'job_id="{job}",user="ann",project="vision",model_type="yolov8n",image_tag="train-yolov8-nano-cu121",'
                  f'gpu_request="1",Hostname="n-{cluster}",UUID="{uuid}",instance="runner:9108",job="bench",'
                  f'cluster="{cluster}"')
        offset = -10.0 if cluster == "new" else 17.5  # in the scrape step of the GPU's sample k
        lines += [f"yolocost_job_info{{{labels}}} 1 {base + SCRAPE * k + offset:.3f}" for k in range(SAMPLES)]
    return "\n".join(_by_series(lines)) + "\n# EOF\n"


def _virtual_gpu(device: str, at) -> list[str]:
    """--kubernetes-virtual-gpus (kubernetes.go, process_metrics.go): utilization and memory
    keep the device-level series beside one per sharing pod holding that pod's processes'
    own values (with `pod_uid`); power and energy are copied once per pod."""
    pods = [(',namespace="ml",pod="share-a",container="train"', ',pod_uid="ua"', 80.0, 3000.0),
            (',namespace="ml",pod="share-b",container="train"', ',pod_uid="ub"', 3.0, 1000.0)]
    lines = []
    for k in range(SAMPLES):
        t = at(k)
        lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{device}}} 83 {t}")
        lines.append(f"DCGM_FI_DEV_FB_USED{{{device}}} 4000 {t}")
        for pod, uid, util, fb in pods:
            lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{device}{pod}{uid}}} {util:g} {t}")
            lines.append(f"DCGM_FI_DEV_FB_USED{{{device}{pod}{uid}}} {fb:g} {t}")
            lines.append(f"DCGM_FI_DEV_POWER_USAGE{{{device}{pod}}} 200 {t}")
            lines.append(f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{device}{pod}}} {1e9 + 6_000_000 * k:.17g} {t}")
    return lines


def _slurm(shared: str, mig: str, at) -> list[str]:
    """--hpc-job-mapping-dir: one series per job listed for a GPU (two jobs on GPU-sss, the
    same values twice); a MIG instance's job from the file named `GPU.GPU_INSTANCE` (GPU-mmm
    instance 1, profile 3g.40gb), which has no DCGM_FI_DEV_GPU_UTIL but the profiling metric."""
    instance = mig + ',GPU_I_PROFILE="3g.40gb",GPU_I_ID="1",hpc_job="1003"'
    lines = []
    for k in range(SAMPLES):
        t = at(k)
        for job in ("1001", "1002"):
            labels = f'{shared},hpc_job="{job}"'
            lines += [f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 60 {t}", f"DCGM_FI_DEV_FB_USED{{{labels}}} 2000 {t}",
                      f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} 150 {t}",
                      f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {1e9 + 4_000_000 * k:.17g} {t}"]
        lines += [f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{instance}}} 0.75 {t}", f"DCGM_FI_DEV_FB_USED{{{instance}}} 500 {t}",
                  f"DCGM_FI_DEV_POWER_USAGE{{{instance}}} 120 {t}",
                  f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{instance}}} {2e9 + 3_600_000 * k:.17g} {t}"]
    return lines


def _profiling_paused(labels: str, at) -> list[str]:
    """DCGM_FI_PROF_GR_ENGINE_ACTIVE (0.9) for the first 65 samples only (profiling paused
    after, e.g. for a profiler: part of the 7th interval has it), DCGM_FI_DEV_GPU_UTIL (40)
    all hour; pod ml/prof holds the GPU."""
    labels += ',namespace="ml",pod="prof",container="train"'
    lines = []
    for k in range(SAMPLES):
        t = at(k)
        lines += [f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 40 {t}", f"DCGM_FI_DEV_FB_USED{{{labels}}} 1000 {t}",
                  f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} 100 {t}",
                  f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {1e9 + 3_000_000 * k:.17g} {t}"]
        if k < 65:
            lines.append(f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{labels}}} 0.9 {t}")
    return lines


def _by_series(lines: list[str]) -> list[str]:
    """OpenMetrics wants each series' samples together and in time order: sorted by series
    (stable, so time order stays), each metric once under its TYPE line."""
    by_name: dict[str, list[str]] = {}
    for line in sorted(lines, key=lambda line: line.rsplit(" ", 2)[0]):
        by_name.setdefault(line.split("{", 1)[0], []).append(line)
    return [part for name, group in by_name.items() for part in (f"# TYPE {name} gauge", *group)]


@pytest.fixture(scope="module")
def modes_prom(tmp_path_factory):
    with h.serve_openmetrics(tmp_path_factory.mktemp("modes"), _openmetrics(h.DATA_START)) as server:
        yield server


def _seconds(db, column: str = "seconds_present") -> list[tuple]:
    return h.query(db, f"SELECT gpu_uuid, coalesce(job_id, '-'), sum({column}) FROM gpu_usage GROUP BY ALL ORDER BY 1, 2")


def test_late_scrapes_on_a_plain_gpu_are_each_counted_once(modes_prom, tmp_path):
    yc = h.Yolocost(tmp_path)
    db = tmp_path / "yc.duckdb"
    config = yc.config(modes_prom.url, prometheus='selector = \'cluster="new", UUID="GPU-fff"\'')
    result = yc.ingest(config, db)
    h.assert_ok(result)
    assert _seconds(db) == [("GPU-fff", "ml/late", Decimal(3600))]
    assert _seconds(db, "seconds_busy") == [("GPU-fff", "ml/late", Decimal(1800))]
    assert _seconds(db, "seconds_idle") == [("GPU-fff", "ml/late", Decimal(1800))]
    # energy: 119 deltas of 3,000,000 mJ (the first sample has no previous one)
    assert h.query(db, "SELECT sum(energy_mj) FROM gpu_usage") == [(119 * 3_000_000,)]


def test_late_scrapes_on_a_joined_gpu_stop_the_ingest_naming_it(modes_prom, tmp_path, cli):
    yc = h.Yolocost(tmp_path)
    db = tmp_path / "yc.duckdb"
    config = yc.config(modes_prom.url, prometheus='selector = \'cluster="new"\'')
    result = yc.ingest(config, db)
    h.assert_one_line_error(result, "12 samples (360 GPU-seconds) of 1 shared, MIG or job-info GPU(s)",
                            "GPU-eee on n-new (12 samples, 360 s)", "Pass --allow-uncounted")
    assert not db.exists()

    allowed = yc.ingest(config, db, extra=("--allow-uncounted",))
    h.assert_ok(allowed)
    assert "warning: --allow-uncounted: 12 samples (360 GPU-seconds)" in allowed.stderr
    assert _seconds(db) == [("GPU-eee", "j9", Decimal(3240)), ("GPU-fff", "ml/late", Decimal(3600))]
    # one note per 300 s interval: the late sample k = 5, 15, ... falls mid-interval, one each
    notes = h.query(db, "SELECT kind, hostname, gpu_uuid, count(*), sum(samples), sum(seconds), "
                        "count(DISTINCT window_start), max(epoch(window_end) - epoch(window_start)) "
                        "FROM ingest_notes GROUP BY ALL")
    assert notes == [("uncounted", "n-new", "GPU-eee", 12, 12, Decimal(360), 12, 300)]
    again = yc.ingest(config, db, extra=("--allow-uncounted",))  # a rerun replaces the window's notes
    h.assert_ok(again)
    assert h.query(db, "SELECT count(*) FROM ingest_notes") == [(12,)]

    # the reports say what the month was billed without: the admin report names the GPU
    month = h.DATA_START.strftime("%Y-%m")
    report = cli("--config", str(config), "--db", str(db), "report", "--month", month, "--format", "html",
                 cwd=tmp_path, timeout=600)
    h.assert_ok(report)
    admin = (tmp_path / "reports" / month / "admin.html").read_text(encoding="utf-8")
    assert "Incomplete data." in admin and "360 GPU-seconds of 1 shared, MIG or job-info GPU(s)" in admin
    assert "GPU-eee on n-new (360 s)." in admin
    project = next((tmp_path / "reports" / month).glob("project-*.html")).read_text(encoding="utf-8")
    assert "Some samples of shared, MIG or job-info GPUs could not be counted" in project
    assert "GPU-eee" not in project


def test_old_namespace_labels_are_read(modes_prom, tmp_path):
    """`--use-old-namespace`: `uuid`, `pod_name`, `pod_namespace`, `container_name`; job-info
    names the GPU by `UUID`, and claims it all the same."""
    yc = h.Yolocost(tmp_path)
    db = tmp_path / "yc.duckdb"
    result = yc.ingest(yc.config(modes_prom.url, prometheus='selector = \'cluster="old"\''), db)
    h.assert_ok(result)
    assert _seconds(db) == [("GPU-ccc", "ml/old-a", Decimal(3600)), ("GPU-ddd", "j7", Decimal(3600)),
                               ("GPU-hhh", "-", Decimal(3600))]
    assert _seconds(db, "seconds_busy") == [("GPU-ccc", "ml/old-a", Decimal(3600)), ("GPU-ddd", "j7", Decimal(0)),
                                               ("GPU-hhh", "-", Decimal(0))]
    assert h.query(db, "SELECT DISTINCT hostname, gpu_model FROM gpu_usage") == [("n-old", MODEL)]


def test_virtual_gpus_are_shared_by_their_pods_each_with_its_own_utilization(modes_prom, tmp_path):
    """Two pods share GPU-vvv all hour: half the GPU's time each (the device-level series is
    the GPU, not a third owner), busy and idle from each pod's own utilization (80 and 3),
    peak memory its own (3,000 and 1,000 MiB), the GPU's energy (119 deltas of 6,000,000 mJ)
    split in half."""
    yc = h.Yolocost(tmp_path)
    db = tmp_path / "yc.duckdb"
    h.assert_ok(yc.ingest(yc.config(modes_prom.url, prometheus='selector = \'cluster="vgpu"\''), db))
    rows = h.query(db, "SELECT job_id, sum(seconds_present), sum(seconds_busy), sum(seconds_idle), "
                       "sum(util_mean * seconds_present) / sum(seconds_present), max(mem_peak_mib), sum(energy_mj) "
                       "FROM gpu_usage GROUP BY ALL ORDER BY 1")
    assert [(j, float(s), float(b), float(i), round(u, 6), m, e) for j, s, b, i, u, m, e in rows] == [
        ("ml/share-a", 1800.0, 1800.0, 0.0, 80.0, 3000.0, 357_000_000),
        ("ml/share-b", 1800.0, 0.0, 1800.0, 3.0, 1000.0, 357_000_000)]


def test_slurm_jobs_share_a_gpu_and_a_mig_instance_is_its_own(modes_prom, tmp_path):
    """hpc_job: two jobs listed for GPU-sss get half its time each (never double); job 1003
    holds MIG instance 1 of GPU-mmm all hour, its utilization from the profiling metric."""
    yc = h.Yolocost(tmp_path)
    db = tmp_path / "yc.duckdb"
    h.assert_ok(yc.ingest(yc.config(modes_prom.url, prometheus='selector = \'cluster="slurm"\''), db))
    rows = h.query(db, "SELECT gpu_uuid, job_id, mig_profile, sum(seconds_present), sum(seconds_busy), "
                       "sum(energy_mj) FROM gpu_usage GROUP BY ALL ORDER BY 1, 2")
    assert [(g, j, p, float(s), float(b), e) for g, j, p, s, b, e in rows] == [
        ("GPU-mmm/1", "1003", "3g.40gb", 3600.0, 3600.0, 119 * 3_600_000),
        ("GPU-sss", "1001", None, 1800.0, 0.0, 119 * 2_000_000),
        ("GPU-sss", "1002", None, 1800.0, 0.0, 119 * 2_000_000)]


def test_a_profiling_metric_paused_part_of_an_interval_keeps_every_sample(modes_prom, tmp_path):
    """`utilization = "auto"` takes the profiling metric where it is there, sample by sample:
    the GPU is present all hour (120 samples), busy for the 65 samples at 90 % (1,950 s), its
    mean utilization (65 x 90 + 55 x 40) / 120, mean power 100 W."""
    yc = h.Yolocost(tmp_path)
    db = tmp_path / "yc.duckdb"
    h.assert_ok(yc.ingest(yc.config(modes_prom.url, prometheus='selector = \'cluster="prof"\''), db))
    rows = h.query(db, "SELECT sum(seconds_present), sum(seconds_busy), sum(seconds_idle), "
                       "sum(util_mean * seconds_present) / sum(seconds_present), "
                       "sum(power_mean_w * seconds_present) / sum(seconds_present) FROM gpu_usage")
    assert [(float(s), float(b), float(i), round(u, 6), round(p, 6)) for s, b, i, u, p in rows] == [
        (3600.0, 1950.0, 0.0, round((65 * 90 + 55 * 40) / 120, 6), 100.0)]


def test_both_uuid_spellings_in_one_window_are_refused(modes_prom, tmp_path):
    yc = h.Yolocost(tmp_path)
    result = yc.ingest(yc.config(modes_prom.url), tmp_path / "yc.duckdb")
    h.assert_one_line_error(result, "name GPUs by UUID on some hosts and by uuid (dcgm-exporter --use-old-namespace)",
                            "[prometheus] selector")
