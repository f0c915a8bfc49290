"""The runner's job-info series carry the label names the cluster's ingest reads."""

import datetime as dt

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from yolocost.attribution import Attribution  # noqa: E402
from yolocost.bench.metrics import JobMetrics  # noqa: E402
from yolocost.bench.nvml import Gpu  # noqa: E402
from yolocost.config import Labels  # noqa: E402

UUID = "GPU-8a6d7f3e-0b1c-4d2e-9f00-123456789abc"


def served_job_info(metrics: JobMetrics) -> list[dict[str, str]]:
    text = generate_latest(metrics.registry).decode()
    return [s.labels for family in text_string_to_metric_families(text) for s in family.samples
            if s.name == "yolocost_job_info"]


@pytest.mark.parametrize("labels, names", [
    (Labels(), {}),
    (Labels(project="team", user="owner", model_type="arch", image_tag="app.kubernetes.io/version"),
     {"project": "team", "user": "owner", "model_type": "arch", "image_tag": "app_kubernetes_io_version"}),
])
def test_job_info_reaches_the_ingest_under_the_configured_label_names(labels, names):
    metrics = JobMetrics("lb-v8n", names)
    metrics.hold({"project": "视觉", "user": "alice", "model_type": "yolov8n", "image_tag": "train-yolov8-nano-cu121",
                  "image_digest": "", "epochs": "3", "imgsz": "64", "batch": "8"}, [Gpu(uuid=UUID)], "node-7", dt.datetime(2026, 11, 2, tzinfo=dt.timezone.utc))
    (series,) = served_job_info(metrics)
    assert (series["job_id"], series["UUID"], series["Hostname"]) == ("lb-v8n", UUID, "node-7")
    for dim, name in names.items():
        assert name in series and dim not in series

    attribution = Attribution(labels)
    attribution.add_job_info([series])
    assert attribution.owner({"UUID": UUID, "yolocost_owner": "job_info", **series}) == "lb-v8n"
    job = attribution.jobs["lb-v8n"]
    assert (job.project, job.user_name, job.model_type, job.image_tag, job.gpu_request, job.epochs) == \
        ("视觉", "alice", "yolov8n", "train-yolov8-nano-cu121", 1, 3)


@pytest.mark.parametrize("labels, message", [
    (Labels(project="job_id"), "project = 'job_id' is also the job id"),
    (Labels(user="UUID"), "user = 'UUID' is also the runner's UUID label"),
    (Labels(model_type="kubernetes.io/hostname", image_tag="Hostname"), "image_tag = 'Hostname' is also"),
    (Labels(project="team", user="team"), "'team' is also the label of project"),
    (Labels(image_tag="image_digest"), "image_tag = 'image_digest' is also the label of image_digest"),
    (Labels(user="project"), "user = 'project' is also the label of project"),
    (Labels(project="__name"), "cannot be served as a Prometheus label name"),
    (Labels(project="1team"), "cannot be served as a Prometheus label name"),
])
def test_label_names_that_collide_are_one_clean_error(labels, message):
    """Before the check, prometheus-client refused them later with `ValueError: Incorrect label names`."""
    from yolocost.bench.metrics import served_label_names
    from yolocost.errors import YolocostError

    with pytest.raises(YolocostError) as raised:
        served_label_names(labels)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    names = {"project": labels.project, "user": labels.user, "model_type": labels.model_type,
             "image_tag": labels.image_tag}
    with pytest.raises(YolocostError, match="cannot be served|is also"):
        JobMetrics("lb-v8n", names)


def test_swapped_label_names_do_not_collide():
    metrics = JobMetrics("lb-v8n", {"project": "user", "user": "project"})
    assert metrics.names["project"] == "user" and metrics.names["user"] == "project"
