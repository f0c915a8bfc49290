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
PodKey = tuple[str, str, str]  # (namespace, pod, uid): one incarnation; uid "" where series carry none
ALLOWLIST_FLAG = "--metric-labels-allowlist"


def sanitize(key: str) -> str:
    """A Kubernetes label key as dcgm-exporter spells it when it copies pod labels (and as
    job-info labels are named): every character outside [a-zA-Z0-9_] turned into `_`."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", key)


def ksm_label(key: str) -> str:
    """A Kubernetes label key as kube-state-metrics 2.x names it in kube_pod_labels: `label_`
    plus the sanitized key in snake case (`_` between a lower-case letter or digit and an
    upper-case letter, then lower case), before any `_conflictN` suffix."""
    return "label_" + re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", sanitize(key)).lower()


def allowlist_flag(keys: list[str]) -> str:
    """kube-state-metrics' flag that exports these pod label keys."""
    return f"{ALLOWLIST_FLAG}=pods=[{','.join(keys)}]"


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
CONTAINER_KEYS = ("image_spec", "image", "image_id")


def image_of(info: dict[str, str]) -> tuple[str | None, str | None]:
    """(tag, digest) of a kube_pod_container_info series. The tag is the one the pod asked for
    (`image_spec`): the runtime's `image` may name another tag of the same digest (containerd
    reports `:latest`), so it counts only where `image_spec` is absent or empty. The digest is the
    runtime's (`image_id`, else a digest in `image`), the one `image_spec` pins only where the
    runtime names none."""
    spec, runtime = info.get("image_spec", ""), info.get("image", "")
    tag, spec_digest = parse_image(spec or runtime)
    runtime_digest = digest_of(info.get("image_id", "")) or (parse_image(runtime)[1] if runtime else None)
    return tag, runtime_digest or spec_digest


def _pod_key(s: dict[str, str]) -> PodKey:
    return s.get("namespace", ""), s.get("pod", ""), s.get("uid", "")


@dataclass
class Attribution:
    """Owner resolution for one ingest, from the label sets of the window.

    The label sets may come in parts (the ingest reads them a chunk of the window at a time)
    and in any order. Where a pod's or job's series disagree on a label (relabelled while it
    ran, two exporters), the greatest value is kept, and of a container's series the one with
    the greatest image labels, so the order they come in changes nothing. Only the labels the
    owner lookup reads are kept, so a month of pods costs little.

    Pods are kept per incarnation (namespace, pod, uid): a pod recreated under the same name
    (StatefulSet, a Job pod with a fixed name) is another pod with other labels. A dcgm series
    names its incarnation with `pod_uid` (dcgm-exporter --kubernetes-enable-pod-uid); without
    it, a name with several incarnations in the window reads only the labels they all share."""

    labels: Labels
    exported_jobs: frozenset[str] = frozenset()
    pod_labels: dict[PodKey, dict[str, str]] = field(default_factory=dict)  # kube_pod_labels names of the keys
    containers: dict[PodKey, dict[str, dict[str, str]]] = field(default_factory=dict)  # CONTAINER_KEYS
    job_info: dict[str, dict[str, str]] = field(default_factory=dict)  # JOB_INFO_KEYS and the dimensions
    jobs: dict[str, JobLabels] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._job_info_keys = (*JOB_INFO_KEYS, *(sanitize(self._key(name)) for name in DIMENSIONS))
        keys = list(dict.fromkeys(k for k in (self._key(name) for name in ("job_id", *DIMENSIONS)) if k))
        self._pod_keys = keys  # the configured pod label keys, each once
        self._groups: dict[str, list[str]] = {}  # kube_pod_labels name -> the configured keys with that name
        for key in sorted(keys):  # kube-state-metrics numbers colliding keys in this order
            self._groups.setdefault(ksm_label(key), []).append(key)
        names = "|".join(re.escape(name) for name in self._groups) or "(?!)"
        self._kept = re.compile(rf"(?:{names})(?:_conflict[0-9]+)?")
        self._incarnations: dict[Pod, set[str]] | None = None  # built at the first lookup
        self._unmapped: set[str] = set()  # kube_pod_labels names whose _conflictN could not be mapped
        self._merged: set[Pod] = set()  # names whose incarnations disagreed, read without pod_uid
        self._copied = False  # some dcgm series carried a configured key (labels copied by the exporter)

    def add_pod_labels(self, series: list[dict[str, str]]) -> None:
        """kube_pod_labels series: each pod incarnation's labels of the [labels] keys, merged over
        its series (a pod without any is kept, empty: it is an incarnation all the same)."""
        self._incarnations = None
        for s in series:
            _merge(self.pod_labels.setdefault(_pod_key(s), {}), s, [k for k in s if self._kept.fullmatch(k)])

    def add_container_info(self, series: list[dict[str, str]]) -> None:
        """kube_pod_container_info series: each container's image labels."""
        self._incarnations = None
        for s in series:
            container = s.get("container", "")
            info = {k: s[k] for k in CONTAINER_KEYS if k in s}
            infos = self.containers.setdefault(_pod_key(s), {})
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

    def missing_allowlist(self) -> str | None:
        """What to say when kube_pod_labels series exist but none carries a configured key (nor
        did a dcgm series carry one copied): kube-state-metrics 2.x was started without the
        allowlist that exports them, and every pod is billed as unlabeled. None otherwise."""
        if not self._pod_keys or not self.pod_labels or self._copied or any(self.pod_labels.values()):
            return None
        return (f"kube_pod_labels carries none of the [labels] keys ({', '.join(self._pod_keys)}): kube-state-metrics "
                f"2.x exports pod labels only for the keys named by {allowlist_flag(self._pod_keys)}; start it with "
                "that flag, or every pod is billed as (unlabeled)")

    def warnings(self) -> list[str]:
        """Everything the lookup could not settle, one line each (for `warning:` lines): the
        missing allowlist, `_conflictN` labels it cannot map, pods it read without their
        incarnation. Call it after the last `owner()`."""
        out = [line for line in [self.missing_allowlist()] if line]
        if self._unmapped:
            names = ", ".join(f"{name}_conflictN ({', '.join(self._groups[name])})" for name in sorted(self._unmapped))
            out.append(f"kube_pod_labels carries {names}: other allowlisted keys collide with the [labels] keys after "
                       "sanitizing, and kube-state-metrics numbers them in the sorted order of all the keys a pod "
                       f"carries, which yolocost cannot see; those labels are left unread (allowlist only the [labels] "
                       f"keys: {allowlist_flag(self._pod_keys)})")
        if self._merged:
            pods = sorted(f"{ns}/{pod}" for ns, pod in self._merged)
            out.append(f"{len(pods)} pod name(s) had incarnations with different labels in the window (e.g. "
                       f"{pods[0]}) and the dcgm series do not say which held the GPU (no pod_uid): they are billed "
                       "with only the labels every incarnation shares; run dcgm-exporter with "
                       "--kubernetes-enable-pod-uid")
        return out

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
        uid = series.get("pod_uid", "")
        facts = self._pod_facts(pod, uid, container)

        def label(name: str) -> str | None:
            key = self._key(name)
            if not key:
                return None
            copied = series.get(sanitize(key)) or None
            self._copied = self._copied or copied is not None
            return facts.get(name) or copied

        job_id = label("job_id") or self._pod_job_id(pod, uid)
        job = self.jobs.setdefault(job_id, JobLabels())
        job.fill(project=label("project"), user_name=label("user"), model_type=label("model_type"))
        if not job.tag_known:
            own = label("image_tag")
            if own is not None or "image" in facts:
                tag, digest = facts.get("image", (None, None))
                job.image_tag = own if own is not None else tag
                job.image_digest = job.image_digest or digest
                job.tag_known = True
        return job_id

    def _uids(self, pod: Pod) -> set[str]:
        """The incarnations (uids) of a pod name in the window's kube-state-metrics series."""
        if self._incarnations is None:
            self._incarnations = {}
            for ns, name, uid in (*self.pod_labels, *self.containers):
                self._incarnations.setdefault((ns, name), set()).add(uid)
        return self._incarnations.get(pod, set())

    def _pod_job_id(self, pod: Pod, uid: str) -> str:
        """<namespace>/<pod>; <namespace>/<pod>/<uid> for a series naming its incarnation where
        the window holds several, so each incarnation is its own job (and a pod name with one
        keeps the job id it always had)."""
        if uid and len(self._uids(pod) - {""} | {uid}) > 1:
            return f"{pod[0]}/{pod[1]}/{uid}"
        return f"{pod[0]}/{pod[1]}"

    def _pod_facts(self, pod: Pod, uid: str, container: str) -> dict:
        """The pod's configured labels (by dimension name, and `image`: (tag, digest)) of the
        incarnation `uid`, or of the only one; of several, the values they all share."""
        uids = self._uids(pod)
        if uid:
            return self._facts((*pod, uid if uid in uids or "" not in uids else ""), container)
        if len(uids) <= 1:
            return self._facts((*pod, next(iter(uids), "")), container)
        each = [self._facts((*pod, u), container) for u in sorted(uids)]
        shared = {k: v for k, v in each[0].items() if all(f.get(k) == v for f in each[1:])}
        if any(f != shared for f in each):
            self._merged.add(pod)
        return shared

    def _facts(self, key: PodKey, container: str) -> dict:
        kube = self.pod_labels.get(key, {})
        out: dict = {}
        for name in ("job_id", *DIMENSIONS):
            value = self._kube_value(kube, self._key(name)) if self._key(name) else None
            if value:
                out[name] = value
        infos = self.containers.get(key, {})
        info = infos[container] if container in infos else (infos[min(infos)] if infos else None)
        if info is not None:
            out["image"] = image_of(info)
        return out

    def _kube_value(self, kube: dict[str, str], key: str) -> str | None:
        """The value of a configured key in a pod's kube_pod_labels. kube-state-metrics names
        keys that collide after sanitizing `<name>_conflict1`, `_conflict2`, ... in the sorted
        order of the colliding keys the pod carries; that order is known only where the
        colliding labels are as many as the configured keys with that name (all of them present,
        no other key among them). Otherwise the label is left unread and said (`warnings`)."""
        name = ksm_label(key)
        group = self._groups[name]
        suffixed = [k for k in kube if k.startswith(f"{name}_conflict") and k[len(name) + 9:].isdigit()]
        if not suffixed and (len(group) == 1 or name not in kube):
            return kube.get(name)
        if len(suffixed) == len(group) and name not in kube:
            return kube.get(f"{name}_conflict{group.index(key) + 1}")
        self._unmapped.add(name)
        return None


def _merge(into: dict[str, str], series: dict[str, str], keys: list[str]) -> None:
    """`series`' values of `keys` into `into`, the greater value winning where both hold one."""
    for k in keys:
        if k not in into or series[k] > into[k]:
            into[k] = series[k]
