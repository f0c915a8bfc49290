"""The runner's Prometheus endpoint (prometheus-client): job info, training progress, results.

Series and labels are those `yolocost ingest` reads (docs/prometheus-inputs.md):
`yolocost_job_info` = 1 per GPU while the job holds it, one `yolocost_epoch_metric` per
results.csv column of each finished epoch with `yolocost_epoch_end_time_seconds`, the final
`yolocost_job_result` (map50, map50_95, best_epoch) and the job's start and end times.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from wsgiref.simple_server import WSGIServer

from ..attribution import sanitize
from ..config import Labels
from ..errors import YolocostError
from .nvml import Gpu

JOB_LABELS = ("project", "user", "model_type", "image_tag", "image_digest")
OTHER_INFO_LABELS = ("gpu_request", "epochs", "imgsz", "batch", "Hostname", "UUID", "GPU_I_ID")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def served_names(label_names: dict[str, str] | None) -> dict[str, str]:
    """The label each job dimension is served as in yolocost_job_info ({"project": "team"}; a
    dimension not named keeps its own name); a YolocostError when one is no Prometheus label
    name, or collides with another dimension's or with the runner's own labels (job_id, UUID, ...)."""
    named = label_names or {}
    names = {dim: named.get(dim) or dim for dim in JOB_LABELS}
    taken = {"job_id": "the job id", **{name: f"the runner's {name} label" for name in OTHER_INFO_LABELS}}
    for dim in sorted(names, key=lambda d: bool(named.get(d))):  # a name the config gives is the one to blame
        name = names[dim]
        if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
            raise YolocostError(f"[labels] {dim} = {name!r} cannot be served as a Prometheus label name "
                                "(letters, digits and _, not starting with a digit or __)")
        if name in taken:
            raise YolocostError(f"[labels] {dim} = {name!r} is also {taken[name]} in yolocost_job_info: "
                                "give it another label name")
        taken[name] = f"the label of {dim}"
    return names


def served_label_names(labels: Labels) -> dict[str, str]:
    """The job-info label names the config's ingest reads ([labels]; defaults without a config),
    checked before any run starts: one that collides with another or with the runner's own
    job-info labels is a one-line error."""
    names = {dim: sanitize(getattr(labels, dim)) for dim in ("project", "user", "model_type", "image_tag")}
    served_names(names)
    return names


class JobMetrics:
    """One job's series in a registry of their own, served over HTTP once `serve` is called."""

    def __init__(self, job_id: str, label_names: dict[str, str] | None = None):
        """`label_names`: the label each job dimension is served as (the cluster's `[labels]`
        keys), e.g. {"project": "team"}; a dimension not named keeps its own name."""
        from prometheus_client import CollectorRegistry, Gauge

        self.job_id = job_id
        self.names = served_names(label_names)
        self.registry = CollectorRegistry()
        self.server: WSGIServer | None = None
        gauge = lambda name, doc, labels: Gauge(name, doc, labels, registry=self.registry)  # noqa: E731
        self.info = gauge("yolocost_job_info", "1 while the job holds this GPU; its labels describe the job.",
                          ("job_id", *self.names.values(), *OTHER_INFO_LABELS))
        self.epoch_metric = gauge("yolocost_epoch_metric", "One results.csv column of a finished epoch (1-based).",
                                  ("job_id", "epoch", "name"))
        self.epoch_end = gauge("yolocost_epoch_end_time_seconds", "Unix time the epoch ended.", ("job_id", "epoch"))
        self.result = gauge("yolocost_job_result", "Final validation of the best weights: map50, map50_95 "
                            "(fractions) and best_epoch.", ("job_id", "name"))
        self.start = gauge("yolocost_job_start_time_seconds", "Unix time the job started.", ("job_id",))
        self.end = gauge("yolocost_job_end_time_seconds", "Unix time the job ended.", ("job_id",))

    def serve(self, addr: str, port: int) -> "JobMetrics":
        from prometheus_client import start_http_server

        try:
            self.server, _ = start_http_server(port, addr=addr, registry=self.registry)
        except OSError as exc:
            raise YolocostError(f"cannot serve metrics on {addr}:{port}: {exc.strerror or exc}") from None
        return self

    def add_collector(self, collector) -> None:
        self.registry.register(collector)

    def hold(self, labels: dict[str, str], gpus: list[Gpu], hostname: str, started: dt.datetime) -> None:
        """Job info for each GPU held (one series with no UUID when none is known), and the start."""
        common = {"job_id": self.job_id, **{self.names.get(k, k): v for k, v in labels.items()},
                  "gpu_request": str(len(gpus)) if gpus else "", "Hostname": hostname}
        for gpu in gpus or [Gpu(uuid="")]:
            self.info.labels(**common, UUID=gpu.uuid, GPU_I_ID=gpu.instance or "").set(1)
        self.start.labels(self.job_id).set(started.timestamp())

    def epoch(self, epoch: int, ended: dt.datetime, values: dict[str, float | None]) -> None:
        for name, value in values.items():
            self.epoch_metric.labels(self.job_id, str(epoch), name).set(value if value is not None else math.nan)
        self.epoch_end.labels(self.job_id, str(epoch)).set(ended.timestamp())

    def finish(self, ended: dt.datetime, results: dict[str, float | int | None]) -> None:
        """The job let go of its GPUs: job info goes, results and end time stay served."""
        self.info.clear()
        for name, value in results.items():
            if value is not None:
                self.result.labels(self.job_id, name).set(value)
        self.end.labels(self.job_id).set(ended.timestamp())

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
