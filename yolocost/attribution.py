"""Who held a GPU and what the job was: label sets from Prometheus -> owners and job rows.

The rules are those of docs/prometheus-inputs.md: Slurm's `hpc_job`, Kubernetes pod labels
in any of the exporter's three spellings, or `yolocost_job_info`; job labels from
`kube_pod_labels` / `kube_pod_container_info`, labels copied onto the dcgm series, or the
job-info series.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .config import Labels
from .promql import JOB_INFO_MARK

Pod = tuple[str, str]  # (namespace, pod)


def sanitize(key: str) -> str:
    """A Kubernetes label key as kube-state-metrics and dcgm-exporter spell it."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", key)


@dataclass(frozen=True)
class GpuIdentity:
    gpu_uuid: str
    hostname: str
    gpu_index: int | None
    gpu_model: str
    mig_profile: str | None


def uuid_of(labels: dict[str, str]) -> str:
    """The GPU's UUID: `UUID`, or `uuid` as dcgm-exporter --use-old-namespace writes it."""
    return labels.get("UUID") or labels.get("uuid") or ""


def gpu_of(labels: dict[str, str]) -> GpuIdentity | None:
    """The GPU (or MIG instance) a series describes; None when it names no GPU."""
    uuid = uuid_of(labels)
    if not uuid:
        return None
    instance = labels.get("GPU_I_ID", "")
    gpu = labels.get("gpu", "")
    return GpuIdentity(
        gpu_uuid=f"{uuid}/{instance}" if instance else uuid,
        hostname=labels.get("Hostname") or labels.get("hostname") or "(unknown)",
        gpu_index=_int(gpu),
        gpu_model=labels.get("modelName") or "(unknown)",
        mig_profile=labels.get("GPU_I_PROFILE") or None,
    )


def pod_of(labels: dict[str, str], exported_jobs: frozenset[str]) -> tuple[Pod, str] | None:
    """(namespace, pod) and container of the pod holding the series' GPU, if any."""
    if labels.get("exported_pod"):
        return (labels.get("exported_namespace", ""), labels["exported_pod"]), labels.get("exported_container", "")
    if labels.get("job") in exported_jobs:  # the series' own pod label names the exporter
        return None
    if labels.get("pod_name"):
        return (labels.get("pod_namespace", ""), labels["pod_name"]), labels.get("container_name", "")
    if labels.get("pod"):
        return (labels.get("namespace", ""), labels["pod"]), labels.get("container", "")
    return None


@dataclass
class JobLabels:
    """What is known about one job; later sources fill only what is still missing."""

    project: str | None = None
    user_name: str | None = None
    model_type: str | None = None
    image_tag: str | None = None
    image_digest: str | None = None
    tag_known: bool = False  # image_tag was set by a source (it may be None = digest-only)
    gpu_request: int | None = None
    epochs: int | None = None
    imgsz: int | None = None
    batch: int | None = None

    def fill(self, **values) -> None:
        for key, value in values.items():
            if value is not None and getattr(self, key) is None:
                setattr(self, key, value)


def parse_image(image: str) -> tuple[str | None, str | None]:
    """(tag, digest) of an image reference: repo:tag, repo@sha256:..., repo (= latest)."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else None
    if tag is None and not digest:
        tag = "latest"
    return tag, digest or None


def digest_of(image_id: str) -> str | None:
    match = re.search(r"sha256:[0-9a-f]{64}", image_id or "")
    return match.group(0) if match else None


def _int(value: str | None) -> int | None:
    """A label holding a count or index; anything else (or more than an INTEGER column holds) is absent."""
    return int(value) if value and value.isascii() and value.isdigit() and int(value) < 2**31 else None


JOB_INFO_KEYS = ("job_id", "image_digest", "gpu_request", "epochs", "imgsz", "batch")  # read as named
DIMENSIONS = ("project", "user", "model_type", "image_tag")  # read under the configured [labels] names
CONTAINER_KEYS = ("image", "image_id")


@dataclass
class Attribution:
    """Owner resolution for one ingest, from the label sets of the window.

    The label sets may come in parts (the ingest reads them a chunk of the window at a time)
    and in any order. Where a pod's or job's series disagree on a label (relabelled while it
    ran, two exporters), the greatest value is kept, and of a container's series the one with
    the greatest image labels, so the order they come in changes nothing. Only the labels the
    owner lookup reads are kept, so a month of pods costs little."""

    labels: Labels
    exported_jobs: frozenset[str] = frozenset()
    pod_labels: dict[Pod, dict[str, str]] = field(default_factory=dict)  # label_<key> of the [labels] keys
    containers: dict[Pod, dict[str, dict[str, str]]] = field(default_factory=dict)  # image, image_id
    job_info: dict[str, dict[str, str]] = field(default_factory=dict)  # JOB_INFO_KEYS and the dimensions
    jobs: dict[str, JobLabels] = field(default_factory=dict)

    def __post_init__(self) -> None:
        keys = [self._key(name) for name in ("job_id", *DIMENSIONS)]
        self._pod_keys = tuple(f"label_{sanitize(k)}" for k in keys if k)
        self._job_info_keys = (*JOB_INFO_KEYS, *(sanitize(self._key(name)) for name in DIMENSIONS))

    def add_pod_labels(self, series: list[dict[str, str]]) -> None:
        """kube_pod_labels series: each pod's labels of the [labels] keys, merged over its series."""
        for s in series:
            kept = [k for k in self._pod_keys if k in s]
            if kept:  # a pod without any reads as an unknown one
                _merge(self.pod_labels.setdefault((s.get("namespace", ""), s.get("pod", "")), {}), s, kept)

    def add_container_info(self, series: list[dict[str, str]]) -> None:
        """kube_pod_container_info series: each container's image labels."""
        for s in series:
            pod, container = (s.get("namespace", ""), s.get("pod", "")), s.get("container", "")
            info = {k: s[k] for k in CONTAINER_KEYS if k in s}
            infos = self.containers.setdefault(pod, {})
            if container not in infos or sorted(info.items()) > sorted(infos[container].items()):
                infos[container] = info

    def add_job_info(self, series: list[dict[str, str]]) -> None:
        """yolocost_job_info series: each job's labels, merged over its series."""
        for s in series:
            if s.get("job_id"):
                _merge(self.job_info.setdefault(s["job_id"], {}), s, [k for k in self._job_info_keys if k in s])

    def owner(self, labels: dict[str, str]) -> str | None:
        """The job id holding the series' GPU, None when unallocated; records the job's labels."""
        if labels.get(JOB_INFO_MARK) == "job_info":
            job_id = labels.get("job_id") or None
            if job_id:
                self._from_job_info(job_id, labels)
            return job_id
        if labels.get("hpc_job"):
            job_id = labels["hpc_job"]
            self._from_job_info(job_id, self.job_info.get(job_id, {}))
            return job_id
        found = pod_of(labels, self.exported_jobs)
        if found is None:
            return None
        pod, container = found
        return self._from_pod(pod, container, labels)

    def _key(self, name: str) -> str:
        return getattr(self.labels, name)

    def _from_job_info(self, job_id: str, series: dict[str, str]) -> None:
        s = {**self.job_info.get(job_id, {}), **series}
        job = self.jobs.setdefault(job_id, JobLabels())
        get = lambda name: s.get(sanitize(self._key(name))) or None  # noqa: E731
        job.fill(project=get("project"), user_name=get("user"), model_type=get("model_type"),
                 image_digest=s.get("image_digest") or None, gpu_request=_int(s.get("gpu_request")),
                 epochs=_int(s.get("epochs")), imgsz=_int(s.get("imgsz")), batch=_int(s.get("batch")))
        if not job.tag_known and s:
            # Prometheus cannot tell an empty label from a missing one (docs/prometheus-inputs.md)
            tag = get("image_tag")
            job.image_tag = tag if tag is not None else (None if job.image_digest else "")
            job.tag_known = True

    def _from_pod(self, pod: Pod, container: str, series: dict[str, str]) -> str:
        kube = self.pod_labels.get(pod, {})

        def label(name: str) -> str | None:
            key = sanitize(self._key(name)) if self._key(name) else ""
            if not key:
                return None
            return kube.get(f"label_{key}") or series.get(key) or None

        job_id = label("job_id") or f"{pod[0]}/{pod[1]}"
        job = self.jobs.setdefault(job_id, JobLabels())
        job.fill(project=label("project"), user_name=label("user"), model_type=label("model_type"))
        if not job.tag_known:
            infos = self.containers.get(pod, {})
            info = infos[container] if container in infos else (infos[min(infos)] if infos else None)
            tag = digest = None
            if info is not None:
                tag, _ = parse_image(info.get("image", ""))
                digest = digest_of(info.get("image_id", "")) or parse_image(info.get("image", ""))[1]
            own = label("image_tag")
            if own is not None or info is not None:
                job.image_tag = own if own is not None else tag
                job.image_digest = job.image_digest or digest
                job.tag_known = True
        return job_id


def _merge(into: dict[str, str], series: dict[str, str], keys: list[str]) -> None:
    """`series`' values of `keys` into `into`, the greater value winning where both hold one."""
    for k in keys:
        if k not in into or series[k] > into[k]:
            into[k] = series[k]
