"""The scenario's series as OpenMetrics text, ready for a Prometheus backfill:

    promtool tsdb create-blocks-from openmetrics --max-block-duration=24h metrics.om DIR

dcgm-exporter series per GPU or MIG instance (labels per the host's attribution mode),
kube-state-metrics pod labels and container images, and what the training runner exposes
(yolocost_job_info, epoch metrics, final results), each target sampled once per 30 s slot
at its own offset. Every family is declared `gauge` (`unknown` for the energy counter: an
OpenMetrics `counter` would need a `_total` suffix), so sample names stay the exporters'
names. Timestamps are seconds with milliseconds; families are contiguous; each series'
samples ascend; the file ends with `# EOF`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..atomic import replacing
from . import expected
from .constants import SAMPLE_SECONDS
from .generate import METRICS
from .scenario import (HOSTNAME_LABEL, MIG_PROFILE, REGISTRY, SERVED_SCRAPES, TAIL_SLOTS, Device, Owner, Pod, Scenario,
                       k8s_suffix)
from .yolo import IMGSZ

JOB_ID_LABEL = "batch.kubernetes.io/job-name"  # [labels] job_id of the written config
RUNNER_JOB, KSM_JOB = "yolocost-bench", "kube-state-metrics"
DCGM_JOB = {"k8s_exported": "nvidia-dcgm-exporter"}  # a scrape config of its own (honor_labels: false)
DRIVER = {"k8s_old": "470.182.03"}
PCI = {
    "a100": ("07", "0F", "47", "4E", "87", "90", "B7", "BD"),
    "a10g": ("00:1B", "00:1C", "00:1D", "00:1E"),
    "v100": ("00:1B", "00:1C", "00:1D", "00:1E"),
}

# family -> OpenMetrics type
FAMILIES = {
    "DCGM_FI_DEV_GPU_UTIL": "gauge",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gauge",
    "DCGM_FI_DEV_FB_USED": "gauge",
    "DCGM_FI_DEV_POWER_USAGE": "gauge",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "unknown",
    "kube_pod_labels": "gauge",
    "kube_pod_container_info": "gauge",
    "yolocost_job_info": "gauge",
    "yolocost_epoch_metric": "gauge",
    "yolocost_epoch_end_time_seconds": "gauge",
    "yolocost_job_result": "gauge",
    "yolocost_job_end_time_seconds": "gauge",
}


def escape(value: str) -> str:
    """A label value escaped for OpenMetrics: backslash, double quote and newline."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def label_text(labels: Iterable[tuple[str, object]]) -> str:
    return ",".join(f'{k}="{escape(str(v))}"' for k, v in labels if v is not None)


def number(v) -> str:
    """A value as text Prometheus reads back to the same float64."""
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    f = float(v)
    return str(int(f)) if f.is_integer() and abs(f) < 2**53 else repr(f)


class _Writer:
    def __init__(self, fh, sc: Scenario):
        self.fh, self.sc = fh, sc
        self.series = self.samples = 0
        self._ts: dict[str, np.ndarray] = {}

    def ts(self, target: str) -> np.ndarray:
        """Sample time text per slot of a scrape target."""
        if target not in self._ts:
            sc = self.sc
            ms = (sc.data_start + SAMPLE_SECONDS * np.arange(len(sc.timestamps[target]), dtype=np.int64)) * 1000
            ms += sc.timestamps[target]
            self._ts[target] = np.array([f"{m // 1000}.{m % 1000:03d}" for m in ms.tolist()], dtype=object)
        return self._ts[target]

    def family(self, name: str) -> None:
        self.fh.write(f"# TYPE {name} {FAMILIES[name]}\n")

    def write(self, name: str, labels, slots: np.ndarray, values, target: str) -> None:
        if not len(slots):
            return
        prefix = f"{name}{{{label_text(labels)}}} "
        ts = self.ts(target)[slots]
        vals = values[slots] if isinstance(values, np.ndarray) else [values] * len(slots)
        self.fh.write("".join([f"{prefix}{v} {t}\n" for v, t in zip(vals, ts)]))
        self.series += 1
        self.samples += len(slots)


def _texts(values: np.ndarray) -> np.ndarray:
    return np.array([number(v) for v in values.tolist()], dtype=object)


def image_ref(o: Owner) -> tuple[str, str]:
    """(image, image_id) of the owner's container as kube-state-metrics shows them."""
    repo = f"{REGISTRY}/{'yolo-train' if o.plan is not None or o.job_name else 'yolo-notebook'}"
    if o.image_tag is None:
        image = f"{repo}@{o.image_digest}"
    elif o.image_tag == "":
        image = repo  # no tag at all: the runtime pulls latest
    else:
        image = f"{repo}:{o.image_tag}"
    return image, f"{repo}@{o.image_digest}"


def sanitize(key: str) -> str:
    return "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in key)


def _pod_labels(o: Owner) -> list[tuple[str, object]]:
    """The pod's labels as (key, value), keys as Kubernetes spells them."""
    return [(JOB_ID_LABEL, o.job_name), ("project", o.project), ("user", o.user), ("model_type", o.model_type)]


class _Dcgm:
    """Label sets of one device's dcgm series, one per owner (or none) per its host's mode."""

    def __init__(self, sc: Scenario, d: Device):
        self.sc, self.d = sc, d
        c, g = d.phys.choice, d.phys.gpu
        pci = PCI.get(g.kind.key, PCI["a10g"])[g.index % 8 if g.kind.key == "a100" else g.index % 4]
        self.base = [
            ("gpu", g.index), ("UUID", g.uuid),
            ("pci_bus_id", f"00000000:{pci}:00.0" if g.kind.key == "a100" else f"00000000:{pci}.0"),
            ("device", f"nvidia{g.index}"), ("modelName", g.kind.name),
            ("GPU_I_PROFILE", MIG_PROFILE if d.instance is not None else None),
            ("GPU_I_ID", d.instance),
            (HOSTNAME_LABEL[c.mode], c.host),
            ("DCGM_FI_DRIVER_VERSION", DRIVER.get(c.mode, "550.90.07")),
        ]
        self.scrape: list[tuple[str, object]] = [("job", DCGM_JOB.get(c.mode, "dcgm-exporter")),
                                                 ("instance", f"{c.host}:9400")]
        self.exporter_pod = f"nvidia-dcgm-exporter-{k8s_suffix(sc.seed, 'exporter', c.host)}"

    def _pod_of(self, owners: np.ndarray) -> np.ndarray:
        key = np.full(len(owners), -1, np.int64)
        slots = np.arange(len(owners))
        for p in self.sc.pods:
            if p.host == self.d.phys.choice.host:
                key[(owners == p.owner) & (slots >= p.first) & (slots < p.last)] = p.index
        return key

    def owner_labels(self, key: int) -> list[tuple[str, object]]:
        mode, sc = self.d.phys.choice.mode, self.sc
        exporter: list[tuple[str, object]] = [("namespace", "gpu-operator"), ("pod", self.exporter_pod),
                                              ("container", "nvidia-dcgm-exporter")]
        if key < 0:
            return exporter if mode == "k8s_exported" else []
        if mode == "slurm":
            return [("hpc_job", sc.owners[key].job_id)]
        p: Pod = sc.pods[key]
        if mode == "k8s_exported":
            return exporter + [("exported_namespace", p.namespace), ("exported_pod", p.name),
                               ("exported_container", "trainer")]
        if mode == "k8s_old":
            return [("pod_namespace", p.namespace), ("pod_name", p.name), ("container_name", "trainer")]
        own: list[tuple[str, object]] = [("namespace", p.namespace), ("pod", p.name), ("container", "trainer")]
        if mode == "k8s_copied":
            own += [(sanitize(k), v) for k, v in _pod_labels(sc.owners[p.owner])]
        return own

    def series(self) -> list[tuple[list, np.ndarray]]:
        """(labels, slots) per series of this device."""
        d, mode = self.d, self.d.phys.choice.mode
        present = d.phys.present
        if mode == "job_info":
            return [(self.base + self.scrape, np.flatnonzero(present))]
        if mode == "slurm":
            ka, kb = d.owner_a.astype(np.int64), d.owner_b.astype(np.int64)
        else:
            ka, kb = self._pod_of(d.owner_a), self._pod_of(d.owner_b)
        out = []
        free = present & (ka < 0) & (kb < 0)
        if free.any():
            out.append((self.base + self.owner_labels(-1) + self.scrape, np.flatnonzero(free)))
        for key in sorted(set(ka[ka >= 0].tolist()) | set(kb[kb >= 0].tolist())):
            out.append((self.base + self.owner_labels(key) + self.scrape,
                        np.flatnonzero(present & ((ka == key) | (kb == key)))))
        return out


def _write_dcgm(w: _Writer, sc: Scenario) -> dict[str, int]:
    per_device = [(d, _Dcgm(sc, d)) for d in sc.devices]
    series = [(d, x, x.series()) for d, x in per_device]
    counts: dict[str, int] = {}
    values = {}
    for d, x, ss in series:
        counts[d.gpu_uuid] = len(ss)
        values[d.gpu_uuid] = {
            "util": _texts(d.util), "fb": _texts(d.fb),
            "power": _texts(d.phys.power), "energy": _texts(d.phys.counter),
        }
    for name, key, which in (
        ("DCGM_FI_DEV_GPU_UTIL", "util", lambda d: d.instance is None),
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "util", lambda d: d.instance is not None),
        ("DCGM_FI_DEV_FB_USED", "fb", lambda d: True),
        ("DCGM_FI_DEV_POWER_USAGE", "power", lambda d: True),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "energy", lambda d: True),
    ):
        w.family(name)
        for d, x, ss in series:
            if which(d):
                for labels, slots in ss:
                    w.write(name, labels, slots, values[d.gpu_uuid][key], f"dcgm:{d.phys.choice.host}")
    return counts


def _write_ksm(w: _Writer, sc: Scenario) -> None:
    scrape = [("job", KSM_JOB), ("instance", "10.96.12.40:8080")]
    w.family("kube_pod_labels")
    for p in sc.pods:
        o = sc.owners[p.owner]
        labels: list[tuple[str, object]] = [("namespace", p.namespace), ("pod", p.name)]
        # pods whose labels the exporter copies get none here (as when kube-state-metrics' label allowlist
        # leaves them out), so the copied labels are the only source
        if sc.mode_of(p.host) != "k8s_copied":
            labels += [("label_" + sanitize(k), v) for k, v in _pod_labels(o)]
        w.write("kube_pod_labels", labels + scrape, np.arange(p.first, p.last), "1", "ksm")
    w.family("kube_pod_container_info")
    for p in sc.pods:
        image, image_id = image_ref(sc.owners[p.owner])
        labels = [("namespace", p.namespace), ("pod", p.name), ("container", "trainer"), ("image", image),
                  ("image_id", image_id)]
        w.write("kube_pod_container_info", labels + scrape, np.arange(p.first, p.last), "1", "ksm")


def _served(sc: Scenario, host: str, since: int) -> np.ndarray:
    """The first SERVED_SCRAPES runner scrape slots at or after an instant."""
    ms = (sc.data_start + SAMPLE_SECONDS * np.arange(sc.n + TAIL_SLOTS, dtype=np.int64)) * 1000
    ms += sc.timestamps[f"runner:{host}"]
    k = int(np.searchsorted(ms, since * 1000))
    return np.arange(k, min(k + SERVED_SCRAPES, len(ms)))


def _codes(d: Device) -> list[int]:
    """Owner codes holding the device at some slot."""
    return sorted(set(d.owner_a[d.owner_a >= 0].tolist()) | set(d.owner_b[d.owner_b >= 0].tolist()))


def _write_runner(w: _Writer, sc: Scenario) -> None:
    scrape = lambda host: [("job", RUNNER_JOB), ("instance", f"{host}:9108")]  # noqa: E731
    w.family("yolocost_job_info")
    for d in sc.devices:
        c = d.phys.choice
        if c.mode not in ("slurm", "job_info"):
            continue
        for code in _codes(d):
            o = sc.owners[code]
            labels: list[tuple[str, Any]]  # scrape()'s (str, str) pairs join them
            labels = [("job_id", o.job_id), ("user", o.user), ("project", o.project), ("model_type", o.model_type),
                      ("image_tag", o.image_tag or None), ("image_digest", o.image_digest if o.digest_label else None),
                      ("gpu_request", o.gpu_request), ("Hostname", c.host), ("UUID", d.phys.gpu.uuid),
                      ("GPU_I_ID", d.instance), ("epochs", o.epochs), ("imgsz", IMGSZ), ("batch", o.batch)]
            slots = np.flatnonzero((d.owner_a == code) | (d.owner_b == code))
            w.write("yolocost_job_info", labels + scrape(c.host), slots, "1", f"runner:{c.host}")
    owners = sorted(sc.owners.values(), key=lambda o: o.job_id)
    epochs = [(o, int(e)) for o in owners for e in expected.reported_epochs(sc, o)]
    w.family("yolocost_epoch_metric")
    for o, e in epochs:
        assert o.plan is not None  # an owner with reported epochs is a planned job
        slots = _served(sc, o.host, int(o.plan.epoch_ts[e]))
        for name, v in zip(METRICS, expected.epoch_values(o, e)):
            labels = [("job_id", o.job_id), ("epoch", e + 1), ("name", name)] + scrape(o.host)
            w.write("yolocost_epoch_metric", labels, slots, number(v), f"runner:{o.host}")
    w.family("yolocost_epoch_end_time_seconds")
    for o, e in epochs:
        assert o.plan is not None
        slots = _served(sc, o.host, int(o.plan.epoch_ts[e]))
        w.write("yolocost_epoch_end_time_seconds", [("job_id", o.job_id), ("epoch", e + 1)] + scrape(o.host),
                slots, number(int(o.plan.epoch_ts[e])), f"runner:{o.host}")
    done = [o for o in owners if expected.finished_in_window(sc, o)]
    w.family("yolocost_job_result")
    for o in done:
        assert o.plan is not None and o.plan.end_time is not None  # finished in the window
        slots = _served(sc, o.host, o.plan.end_time)
        for name, v in expected.result_values(o).items():
            w.write("yolocost_job_result", [("job_id", o.job_id), ("name", name)] + scrape(o.host), slots, number(v),
                    f"runner:{o.host}")
    w.family("yolocost_job_end_time_seconds")
    for o in done:
        assert o.plan is not None and o.plan.end_time is not None
        slots = _served(sc, o.host, o.plan.end_time)
        w.write("yolocost_job_end_time_seconds", [("job_id", o.job_id)] + scrape(o.host), slots,
                number(o.plan.end_time), f"runner:{o.host}")


@dataclass(frozen=True)
class Written:
    series: int
    samples: int
    series_per_device: dict[str, int]  # gpu_uuid (UUID or UUID/GPU_I_ID) -> dcgm series of it


def write_openmetrics(sc: Scenario, path: Path) -> Written:
    """Write the scenario's series as OpenMetrics text (atomically: a temp file, then renamed)."""
    with replacing(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        w = _Writer(fh, sc)
        per_device = _write_dcgm(w, sc)
        _write_ksm(w, sc)
        _write_runner(w, sc)
        fh.write("# EOF\n")
    return Written(w.series, w.samples, per_device)
