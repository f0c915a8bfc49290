"""kube-state-metrics 2.x as it really is, through a real (backfilled) Prometheus: the image tag
the pod asked for, and a pod recreated under the same name billed as two jobs.

The label sets are kube-state-metrics' (internal/store/pod.go): `kube_pod_labels{namespace, pod,
uid, label_<key>...}` and `kube_pod_container_info{namespace, pod, uid, container, image_spec,
image, image_id, container_id}`; dcgm-exporter's with --kubernetes-enable-pod-uid
(`hostname`, `pod`, `namespace`, `container`, `pod_uid`). One hour scraped every 30 s:

* GPU-aaa: pod ml/trainer-0, first uid u1 (project vision, user ann, asked for
  train-yolov8-small-cu121) for 30 minutes, then recreated as uid u2 (project speech, user bob,
  train-yolov8-medium-cu121) for 30 minutes; its dcgm series carry `pod_uid`.
* GPU-bbb: pod ml/solo (uid u3, project vision, user cy, train-yolov8-small-cu121) all hour,
  its dcgm series without `pod_uid`.
* containerd reports every image as `reg.io/yolo:latest` (`image`); the digests are in `image_id`.

By hand, at 2.00 a GPU-hour: ml/trainer-0/u1 and ml/trainer-0/u2 0.5 h = 1.00 each, ml/solo
1 h = 2.00; vision 3.00, speech 1.00; no tag-policy violation.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner


SCRAPE, SAMPLES, HALF = 30, 120, 60
DIGEST_A, DIGEST_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64
MODEL = "NVIDIA A100-SXM4-80GB"
SMALL, MEDIUM = "train-yolov8-small-cu121", "train-yolov8-medium-cu121"


def _openmetrics(data_start: dt.datetime) -> str:
    def at(k: int) -> str:
        return f"{data_start.timestamp() + 7.413 + SCRAPE * k:.3f}"

    gpu_a = f'gpu="0",UUID="GPU-aaa",device="nvidia0",modelName="{MODEL}",hostname="n1",instance="n1:9400",job="dcgm"'
    gpu_b = f'gpu="1",UUID="GPU-bbb",device="nvidia1",modelName="{MODEL}",hostname="n1",instance="n1:9400",job="dcgm"'
    trainer = ',namespace="ml",pod="trainer-0",container="train"'
    series = [(gpu_a + trainer + ',pod_uid="u1"', range(HALF), 90.0, 1_000_000_000),
              (gpu_a + trainer + ',pod_uid="u2"', range(HALF, SAMPLES), 90.0, 1_000_000_000),
              (gpu_b + ',namespace="ml",pod="solo",container="train"', range(SAMPLES), 50.0, 500_000_000)]
    lines = []
    for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
                 "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"):
        lines.append(f"# TYPE {name} gauge")
        for labels, ks, util, energy in series:
            for k in ks:
                value = {"DCGM_FI_DEV_GPU_UTIL": util, "DCGM_FI_DEV_FB_USED": 1000.0,
                         "DCGM_FI_DEV_POWER_USAGE": 100.0}.get(name, energy + 3_000_000 * k)
                lines.append(f"{name}{{{labels}}} {value:.17g} {at(k)}")
    ksm = 'instance="10.96.0.40:8080",job="kube-state-metrics"'
    pods = [("trainer-0", "u1", range(HALF), "vision", "ann", SMALL, DIGEST_A),
            ("trainer-0", "u2", range(HALF, SAMPLES), "speech", "bob", MEDIUM, DIGEST_B),
            ("solo", "u3", range(SAMPLES), "vision", "cy", SMALL, DIGEST_A)]
    lines.append("# TYPE kube_pod_labels gauge")
    for pod, uid, ks, project, user, _, _ in pods:
        lines += [f'kube_pod_labels{{namespace="ml",pod="{pod}",uid="{uid}",label_project="{project}",'
                  f'label_user="{user}",{ksm}}} 1 {at(k)}' for k in ks]
    lines.append("# TYPE kube_pod_container_info gauge")
    for pod, uid, ks, _, _, tag, digest in pods:
        lines += [f'kube_pod_container_info{{namespace="ml",pod="{pod}",uid="{uid}",container="train",'
                  f'image_spec="reg.io/yolo:{tag}",image="reg.io/yolo:latest",'
                  f'image_id="reg.io/yolo@{digest}",container_id="containerd://{uid}",{ksm}}} 1 {at(k)}'
                  for k in ks]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def kube_prom(tmp_path_factory):
    with h.serve_openmetrics(tmp_path_factory.mktemp("kube"), _openmetrics(h.DATA_START)) as server:
        yield server


def test_image_spec_and_pod_uid_make_the_bill(kube_prom, tmp_path):
    yc = h.Yolocost(tmp_path)
    db = tmp_path / "yc.duckdb"
    result = yc.ingest(yc.config(kube_prom.url), db)
    h.assert_ok(result)
    assert "warning" not in result.stderr

    usage = h.query(db, "SELECT job_id, sum(seconds_present) FROM gpu_usage WHERE job_id IS NOT NULL GROUP BY 1 "
                        "ORDER BY 1")
    assert usage == [("ml/solo", Decimal(3600)), ("ml/trainer-0/u1", Decimal(1800)),
                     ("ml/trainer-0/u2", Decimal(1800))]
    jobs = h.query(db, "SELECT job_id, project, user_name, image_tag, image_digest FROM jobs ORDER BY 1")
    assert jobs == [("ml/solo", "vision", "cy", SMALL, DIGEST_A),
                    ("ml/trainer-0/u1", "vision", "ann", SMALL, DIGEST_A),
                    ("ml/trainer-0/u2", "speech", "bob", MEDIUM, DIGEST_B)]
    costs = h.query(db, "SELECT job_id, cost FROM mart_job ORDER BY 1")
    assert [(j, Decimal(c)) for j, c in costs] == [("ml/solo", Decimal("2")), ("ml/trainer-0/u1", Decimal("1")),
                                                   ("ml/trainer-0/u2", Decimal("1"))]
    assert h.query(db, "SELECT count(*) FROM mart_tag_violations") == [(0,)]

