"""Live scrapes for tests: a scripted dcgm-exporter and kube-state-metrics on loopback, what
the metric stores kept of them, and the bill computed by hand from that.

    cluster = LiveCluster()
    with cluster.serving():
        ...  # Prometheus and VictoriaMetrics scrape cluster.targets() every second
        cluster.begin(time.time(), grain=60)  # the script runs from now to a grain boundary
    stored = stored_samples(server.url, DCGM_FIELDS, at=cluster.end, seconds=600)
    expected = expected_usage(stored, interval=1, grain=60, window=cluster.window)

The exporters serve text exposition exactly as dcgm-exporter (render_metrics.go,
gpu_collector.go, transformation/kubernetes.go) and kube-state-metrics 2.x write it, and log
every request: when it arrived, who asked (Prometheus or VictoriaMetrics, by user agent),
the status and each series served. The script, a function of the time since `begin`:

* node `live-a` (labels as dcgm-exporter since May 2026: `hostname`; pods in
  `namespace`/`pod`/`container`): GPU 0 held by pod team-a/train-a, then by nobody, then by
  team-b/train-b; GPU 1 appears after a while, held by team-b/eval-c; GPU 2 held by nobody
  until it vanishes; an outage in which every scrape is answered 503.
* node `live-b` (an older exporter: `Hostname`) runs with `--kubernetes-virtual-gpus`: its
  GPU is shared by pods team-a/share-x and team-b/share-y. DCGM_FI_DEV_GPU_UTIL and
  DCGM_FI_DEV_FB_USED keep the device-level series (no pod labels) beside one series per pod
  with the pod's own reading and `pod_uid`, `vgpu`; the other fields one copy per pod. The
  exporter restarts (connections refused for a few seconds) and the GPU's energy counter
  starts again from near zero (a driver reload).
* `kube-state-metrics`: kube_pod_labels (project, user; share-y has no project) and
  kube_pod_container_info (image as the runtime reports it, image_spec as the pod asked).

The expected bill is computed from the samples each store kept (read back raw with an
instant query of a range selector; NaN staleness markers dropped), never from the schedule:
a store stamps a sample with the time its scrape started (Prometheus) or was due
(VictoriaMetrics), and may keep two samples in one interval-aligned slot and none in the next.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterable, Iterator

import duckdb

from helpers.builders import yolocost
from helpers.promserver import scrape_job

from yolocost.synth.openmetrics import label_text

UTC = dt.timezone.utc
UTIL, FB, POWER, ENERGY = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
                           "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
DCGM_FIELDS = (UTIL, FB, POWER, ENERGY)
# dcgm-exporter's default-counters.csv: type and help of each field
FIELD_TYPES = {UTIL: ("gauge", "GPU utilization (in %)."), FB: ("gauge", "Framebuffer memory used (in MiB)."),
               POWER: ("gauge", "Power draw (in W)."),
               ENERGY: ("counter", "Total energy consumption since boot (in mJ).")}
PER_PROCESS = (UTIL, FB)  # fields --kubernetes-virtual-gpus also serves per pod (transformation/process_metrics.go)
BUSY, IDLE = 70.0, 5.0  # the default thresholds: busy above, idle below (percent)
DRIVER = "550.54.15"
CLI_TIMEOUT = 180


# --------------------------------------------------------------------------- the cluster


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str
    pci_bus_id: str
    model: str
    host: str
    host_label: str  # "hostname" (dcgm-exporter since May 2026) or "Hostname" (before)


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    container: str
    uid: str
    labels: tuple[tuple[str, str], ...]  # pod labels kube-state-metrics exports (label_<key>)
    image_spec: str  # what the pod asked for
    image: str  # what the container runtime reports (may be another tag of the same digest)
    digest: str

    @property
    def owner(self) -> str:
        """The job id yolocost gives a pod without a job-id label: namespace/pod."""
        return f"{self.namespace}/{self.name}"


def _pod(namespace, name, container, n, labels, tag, runtime_tag=None) -> Pod:
    digest = "sha256:" + f"{n:02d}" * 32
    return Pod(namespace, name, container, f"7d3c{n:04d}-0000-4000-8000-00000000{n:04d}", tuple(labels.items()),
               f"registry.example/yolo:{tag}", f"registry.example/yolo:{runtime_tag or tag}", digest)


A100, L40S = "NVIDIA A100-SXM4-80GB", "NVIDIA L40S"
GPU_A0 = Gpu(0, "GPU-1a2b3c4d-0000-4000-8000-0000000000a0", "00000000:07:00.0", A100, "live-a", "hostname")
GPU_A1 = Gpu(1, "GPU-1a2b3c4d-0000-4000-8000-0000000000a1", "00000000:0F:00.0", A100, "live-a", "hostname")
GPU_A2 = Gpu(2, "GPU-1a2b3c4d-0000-4000-8000-0000000000a2", "00000000:47:00.0", A100, "live-a", "hostname")
GPU_B0 = Gpu(0, "GPU-5e6f7a8b-0000-4000-8000-0000000000b0", "00000000:3B:00.0", L40S, "live-b", "Hostname")
TRAIN_A = _pod("team-a", "train-a", "trainer", 1, {"project": "vision", "user": "ann"}, "train-yolov8-medium-cu121")
TRAIN_B = _pod("team-b", "train-b", "trainer", 2, {"project": "detect", "user": "bob"}, "train-yolov10-large-cu121")
EVAL_C = _pod("team-b", "eval-c", "eval", 3, {"project": "detect", "user": "cy"}, "eval-yolov10-large-cu121")
# share-x asked for a conforming tag; the runtime reports the same digest under `latest`
SHARE_X = _pod("team-a", "share-x", "notebook", 4, {"project": "vision", "user": "dee"},
               "train-yolov8-small-cu121", runtime_tag="latest")
SHARE_Y = _pod("team-b", "share-y", "notebook", 5, {"user": "eve"}, "train-yolov8-nano-cu121")  # no project
PODS = (TRAIN_A, TRAIN_B, EVAL_C, SHARE_X, SHARE_Y)
SHARED = ((SHARE_X, "0"), (SHARE_Y, "1"))  # the pods time-slicing GPU_B0, with their vgpu replica
POWER_W = {GPU_A0.uuid: 300.0, GPU_A1.uuid: 60.0, GPU_A2.uuid: 40.0, GPU_B0.uuid: 250.0}
ENERGY_BASE_MJ = {GPU_A0.uuid: 5_000_000_000, GPU_A1.uuid: 2_000_000_000, GPU_A2.uuid: 1_000_000_000,
                  GPU_B0.uuid: 8_000_000_000}
ENERGY_AFTER_RESET_MJ = 1_000  # GPU_B0's counter right after the driver reload


@dataclass(frozen=True)
class Series:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def text(self) -> str:
        return f"{self.name}{{{label_text(self.labels)}}} {_number(self.name, self.value)}"


def _number(name: str, value: float) -> str:
    """As dcgm-exporter prints it: integer fields with %d, power (a double) with %f."""
    if name == POWER:
        return f"{value:f}"
    return f"{int(value)}" if float(value).is_integer() else repr(float(value))


def dcgm_series(name: str, gpu: Gpu, value: float, attributes: dict[str, str] | None = None) -> Series:
    """One series as dcgm-exporter's gpuMetricsFormat template renders it: gpu, UUID,
    pci_bus_id, device, modelName, hostname, then the label fields (DCGM_FI_DRIVER_VERSION),
    then the attributes (pod mapping), each map in key order as Go's template ranges it."""
    labels = [("gpu", str(gpu.index)), ("UUID", gpu.uuid), ("pci_bus_id", gpu.pci_bus_id),
              ("device", f"nvidia{gpu.index}"), ("modelName", gpu.model), (gpu.host_label, gpu.host),
              ("DCGM_FI_DRIVER_VERSION", DRIVER)]
    labels += sorted((attributes or {}).items())
    return Series(name, tuple(labels), float(value))


def pod_attributes(pod: Pod) -> dict[str, str]:
    return {"pod": pod.name, "namespace": pod.namespace, "container": pod.container}


def exposition(series: Iterable[Series]) -> str:
    """Text exposition: each family's HELP and TYPE, then its series."""
    by_name: dict[str, list[Series]] = defaultdict(list)
    for s in series:
        by_name[s.name].append(s)
    out = []
    for name, items in by_name.items():
        kind, help_text = FIELD_TYPES.get(name, ("gauge", name))
        out.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")
        out.extend(s.text() + "\n" for s in items)
    return "".join(out)


def even_mj(value: float) -> int:
    """Energy counters are served as even millijoules, so a delta shared by two pods splits exactly."""
    return 2 * round(value / 2)


class LiveCluster:
    """The scripted cluster: what each exporter serves at a time (see the module docstring).

    Before `begin` every GPU but GPU_A1 is served as at the script's start; the script's
    events sit at fractions of its length (`begin` .. `end`, `end` on the grain)."""

    def __init__(self, min_seconds: float = 100.0, outage_seconds: float = 6.0, restart_seconds: float = 4.0):
        self.min_seconds = min_seconds
        self.outage_seconds = outage_seconds
        self.restart_seconds = restart_seconds
        self.origin = time.time()  # the energy counters count from here
        self.start: float | None = None
        self.end: float | None = None
        self.grain: int | None = None
        self.log: list[Scrape] = []
        self._lock = threading.Lock()
        self.exporters: dict[str, Exporter] = {}

    # -- the script
    def begin(self, now: float, grain: int) -> None:
        """Start the script at `now`; it ends at the first grain boundary at least min_seconds on."""
        self.grain = grain
        self.end = math.ceil((now + self.min_seconds) / grain) * grain
        self.start = now

    def at(self, fraction: float) -> float:
        """The time `fraction` of the way through the script (far in the future before `begin`)."""
        if self.start is None:
            return math.inf
        return self.start + fraction * (self.end - self.start)

    @property
    def window(self) -> tuple[int, int]:
        """Whole grains covering the script: [floor(start), end)."""
        return int(self.start // self.grain * self.grain), int(self.end)

    def a0_owner(self, now: float) -> Pod | None:
        if now < self.at(0.4):
            return TRAIN_A
        return None if now < self.at(0.5) else TRAIN_B

    def a1_present(self, now: float) -> bool:
        return now >= self.at(0.15)

    def a2_present(self, now: float) -> bool:
        return now < self.at(0.75)

    def outage(self) -> tuple[float, float]:
        """node live-a answers 503 in this span."""
        return self.at(0.6), self.at(0.6) + self.outage_seconds

    def restart(self) -> tuple[float, float]:
        """node live-b refuses connections in this span; its energy counter restarts at the end."""
        return self.at(0.3), self.at(0.3) + self.restart_seconds

    def energy(self, gpu: Gpu, now: float) -> int:
        """The GPU's energy counter, mJ: power x time since the origin (GPU_B0: since its reset)."""
        since = self.origin
        base = ENERGY_BASE_MJ[gpu.uuid]
        if gpu is GPU_B0 and now >= self.restart()[1]:
            since, base = self.restart()[1], ENERGY_AFTER_RESET_MJ
        return even_mj(base + POWER_W[gpu.uuid] * 1000 * (now - since))

    @staticmethod
    def util(owner: Pod | None, gpu: Gpu, now: float) -> float:
        """Utilization by who holds the GPU, varying by the second so busy and idle seconds are
        counted sample by sample."""
        s = int(now)
        if gpu is GPU_A0:
            if owner is TRAIN_A:
                return 60.0 if s % 4 == 0 else 92.0
            return 0.0 if owner is None else (75.0 if s % 3 == 0 else 40.0)
        if gpu is GPU_A1:
            return 50.0 if s % 5 == 0 else 2.0
        if gpu is GPU_A2:
            return 0.0
        return {SHARE_X: 80.0, SHARE_Y: 3.0}.get(owner, 83.0)  # GPU_B0: per pod, or the device

    def node_a(self, now: float) -> tuple[int, list[Series]]:
        """dcgm-exporter on live-a (Kubernetes pod mapping): (status, series)."""
        lo, hi = self.outage()
        if lo <= now < hi:
            return 503, []
        held = [(GPU_A0, self.a0_owner(now))]
        if self.a1_present(now):
            held.append((GPU_A1, EVAL_C))
        if self.a2_present(now):
            held.append((GPU_A2, None))
        out = []
        for name in DCGM_FIELDS:
            for gpu, owner in held:
                value = {UTIL: self.util(owner, gpu, now), FB: 20000.0 if owner else 0.0,
                         POWER: POWER_W[gpu.uuid], ENERGY: self.energy(gpu, now)}[name]
                out.append(dcgm_series(name, gpu, value, pod_attributes(owner) if owner else None))
        return 200, out

    def node_b(self, now: float) -> tuple[int, list[Series]]:
        """dcgm-exporter on live-b with --kubernetes-virtual-gpus: the device-level series of the
        per-process fields beside one per pod (with pod_uid and vgpu); other fields one copy per pod."""
        gpu = GPU_B0
        out = []
        for name in DCGM_FIELDS:
            device = {UTIL: self.util(None, gpu, now), FB: 9000.0, POWER: POWER_W[gpu.uuid],
                      ENERGY: self.energy(gpu, now)}[name]
            if name in PER_PROCESS:
                out.append(dcgm_series(name, gpu, device))
                for pod, vgpu in SHARED:
                    own = self.util(pod, gpu, now) if name == UTIL else {SHARE_X: 6000.0, SHARE_Y: 2500.0}[pod]
                    out.append(dcgm_series(name, gpu, own, {**pod_attributes(pod), "pod_uid": pod.uid, "vgpu": vgpu}))
            else:
                for pod, vgpu in SHARED:
                    out.append(dcgm_series(name, gpu, device, {**pod_attributes(pod), "vgpu": vgpu}))
        return 200, out

    @staticmethod
    def kube_state(now: float) -> tuple[int, list[Series]]:
        """kube-state-metrics 2.x: kube_pod_labels and kube_pod_container_info of every pod."""
        out = []
        for pod in PODS:
            ident = (("namespace", pod.namespace), ("pod", pod.name), ("uid", pod.uid))
            out.append(Series("kube_pod_labels", ident + tuple((f"label_{k}", v) for k, v in pod.labels), 1.0))
        for pod in PODS:
            ident = (("namespace", pod.namespace), ("pod", pod.name), ("uid", pod.uid))
            repo = pod.image.rpartition(":")[0]
            out.append(Series("kube_pod_container_info", ident + (
                ("container", pod.container), ("image_spec", pod.image_spec), ("image", pod.image),
                ("image_id", f"{repo}@{pod.digest}"), ("container_id", f"containerd://{pod.uid.replace('-', '')}")),
                1.0))
        return 200, out

    # -- serving
    def record(self, scrape: Scrape) -> None:
        with self._lock:
            self.log.append(scrape)

    @contextlib.contextmanager
    def serving(self) -> Iterator[LiveCluster]:
        """The three exporters on loopback (free ports), stopped on exit; node live-b is closed
        and reopened on its port for the restart."""
        self.exporters = {
            "dcgm-live-a": Exporter("dcgm-live-a", self.node_a, self),
            "dcgm-live-b": Exporter("dcgm-live-b", self.node_b, self, down=self.restart),
            "kube-state-metrics": Exporter("kube-state-metrics", self.kube_state, self),
        }
        try:
            for exporter in self.exporters.values():
                exporter.start()
            yield self
        finally:
            for exporter in self.exporters.values():
                exporter.stop()

    def scrape_configs(self, interval: int) -> str:
        """`scrape_configs` items (Prometheus and VictoriaMetrics read the same), one job per exporter."""
        return "".join(scrape_job(name, [f"127.0.0.1:{e.port}"], interval=f"{interval}s")
                       for name, e in self.exporters.items())

    def instance(self, target: str) -> str:
        return f"127.0.0.1:{self.exporters[target].port}"

    def served(self, store: str, target: str) -> list[Scrape]:
        """The requests of one store (by user agent) to one exporter, in arrival order."""
        with self._lock:
            return sorted((s for s in self.log if s.target == target and s.store == store), key=lambda s: s.arrival)


@dataclass(frozen=True)
class Scrape:
    """One request an exporter answered: when it arrived, who asked, status, the series served."""

    target: str
    arrival: float
    agent: str
    status: int
    series: tuple[Series, ...]

    @property
    def store(self) -> str:
        if "vm_promscrape" in self.agent or "VictoriaMetrics" in self.agent:
            return "victoriametrics"
        return "prometheus" if "Prometheus" in self.agent else self.agent


class Exporter:
    """One scrape target: an http.server thread on 127.0.0.1 answering every path with
    render(now); while down(now) says so, its listener is closed (connections refused)."""

    def __init__(self, name: str, render: Callable[[float], tuple[int, list[Series]]], cluster: LiveCluster,
                 down: Callable[[], tuple[float, float]] | None = None):
        self.name, self.render, self.cluster, self.down = name, render, cluster, down
        self.port: int | None = None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._watch: threading.Thread | None = None

    def _handler(self):
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                now = time.time()
                status, series = exporter.render(now)
                body = exposition(series).encode() if status == 200 else b"exporter unavailable\n"
                exporter.cluster.record(Scrape(exporter.name, now, self.headers.get("User-Agent", ""), status,
                                               tuple(series)))
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        return Handler

    def _listen(self) -> None:
        deadline = time.monotonic() + 10
        while True:
            try:
                self._server = ThreadingHTTPServer(("127.0.0.1", self.port or 0), self._handler())
                break
            except OSError:  # the port of a restart not free yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    def _close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    def _watch_down(self) -> None:
        while not self._stop.wait(0.02):
            lo, hi = self.down()
            if self._server is not None and lo <= time.time() < hi:
                self._close()
            elif self._server is None and time.time() >= hi:
                self._listen()

    def start(self) -> None:
        self._listen()
        if self.down is not None:
            self._watch = threading.Thread(target=self._watch_down, daemon=True)
            self._watch.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.join(timeout=5)
        self._close()


# --------------------------------------------------------------------------- the stores


def api(url: str, path: str, params: dict[str, str]) -> dict:
    with urllib.request.urlopen(f"{url}{path}?{urllib.parse.urlencode(params)}", timeout=60) as resp:
        answer = json.load(resp)
    if answer.get("status") != "success":
        raise RuntimeError(f"{url}{path} {params}: {answer}")
    return answer["data"]


def wait_for_scrapes(url: str, targets: int, timeout: float = 30.0) -> None:
    """Until the store has scraped `targets` targets at least once (Prometheus and
    VictoriaMetrics both answer /api/v1/targets)."""
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        try:
            active = api(url, "/api/v1/targets", {})["activeTargets"]
            seen = sum(1 for t in active if t.get("health") == "up")
            if seen >= targets:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url}: {seen} of {targets} targets scraped after {timeout:.0f} s")


@dataclass
class StoredSeries:
    labels: dict[str, str]
    samples: list[tuple[int, float]]  # (milliseconds, value), ascending, NaN dropped
    nan: int = 0  # staleness markers (NaN) the store returned and that were dropped


def stored_samples(url: str, names: Iterable[str], at: float, seconds: int) -> dict[str, list[StoredSeries]]:
    """The raw samples each store kept of `names` in (at - seconds, at]: an instant query of a
    range selector returns them with their stored timestamps. VictoriaMetrics 1.79 returns
    staleness markers among them as NaN: dropped, and counted in `nan`."""
    out = {}
    for name in names:
        result = api(url, "/api/v1/query", {"query": f"{name}[{seconds}s]", "time": f"{at:.3f}"})["result"]
        series = []
        for r in result:
            labels = dict(r["metric"])
            labels.pop("__name__", None)
            kept = [(round(float(t) * 1000), float(v)) for t, v in r["values"]]
            good = [(t, v) for t, v in kept if not math.isnan(v)]
            series.append(StoredSeries(labels, sorted(good), nan=len(kept) - len(good)))
        out[name] = series
    return out


# --------------------------------------------------------------------------- the bill by hand


def owner_of(labels: dict[str, str]) -> str | None:
    """The pod a dcgm series names (namespace/pod), None for a series without pod labels."""
    return f"{labels['namespace']}/{labels['pod']}" if labels.get("pod") else None


@dataclass
class Bill:
    """One gpu_usage row as it should read: GPU x owner x grain interval (exact fractions)."""

    seconds: Fraction = Fraction(0)
    busy: Fraction = Fraction(0)
    idle: Fraction = Fraction(0)
    util_weighted: Fraction = Fraction(0)  # sum of util x seconds
    energy: Fraction = Fraction(0)
    samples: int = 0

    @property
    def util_mean(self) -> float | None:
        return float(self.util_weighted / self.seconds) if self.seconds else None


Key = tuple[str, "str | None", int]  # (gpu uuid, owner, interval start in epoch seconds)


def expected_usage(stored: dict[str, list[StoredSeries]], interval: int, grain: int,
                   window: tuple[int, int], gpus: Iterable[str] | None = None) -> dict[Key, Bill]:
    """The bill of every GPU x owner x grain interval in `window`, by hand from stored samples.

    A GPU is present at each timestamp where one of its DCGM_FI_DEV_GPU_UTIL series holds a
    sample. Its owners there are the pods those series name; a series without pod labels (a
    free GPU, or the device-level series beside per-pod ones in virtual-GPU mode) is the GPU
    itself, and the owner is None only when no series names a pod. Each of n owners gets
    interval/n seconds, busy when its own utilization is above 70 %, idle below 5 %. Energy:
    per GPU the counter (copies per pod carry the same value) differenced between consecutive
    stored samples, a drop read as a reset (the delta is then the new value), the delta shared
    by the owners the energy series name at the later sample."""
    lo, hi = window[0] * 1000, window[1] * 1000
    wanted = set(gpus) if gpus is not None else None
    out: dict[Key, Bill] = defaultdict(Bill)

    def slot(ms: int) -> int:
        return ms // (grain * 1000) * grain

    util: dict[str, dict[int, dict[str | None, float]]] = defaultdict(lambda: defaultdict(dict))
    for s in stored[UTIL]:
        for t, v in s.samples:
            util[s.labels["UUID"]][t][owner_of(s.labels)] = v
    for uuid, at in util.items():
        if wanted is not None and uuid not in wanted:
            continue
        for t, readings in at.items():
            if not lo <= t < hi:
                continue
            owners = {o: v for o, v in readings.items() if o is not None} or {None: readings[None]}
            share = Fraction(interval, len(owners))
            for owner, v in owners.items():
                bill = out[(uuid, owner, slot(t))]
                bill.seconds += share
                bill.samples += 1
                bill.util_weighted += share * Fraction(v)
                bill.busy += share if v > BUSY else 0
                bill.idle += share if v < IDLE else 0

    counter: dict[str, dict[int, tuple[float, set]]] = defaultdict(dict)
    for s in stored[ENERGY]:
        for t, v in s.samples:
            value, owners = counter[s.labels["UUID"]].get(t, (v, set()))
            counter[s.labels["UUID"]][t] = (max(value, v), owners | {owner_of(s.labels)})
    for uuid, at in counter.items():
        if wanted is not None and uuid not in wanted:
            continue
        previous = None
        for t in sorted(at):
            value, owners = at[t]
            if previous is not None and lo <= t < hi:
                delta = value - previous if value >= previous else value
                pods = owners - {None} or {None}
                for owner in pods:
                    out[(uuid, owner, slot(t))].energy += Fraction(delta) / len(pods)
            previous = value
    return dict(out)


def over_window(expected: dict[Key, Bill], got: dict[Key, dict], start: int) -> tuple[dict, dict]:
    """Both sides summed over the window per GPU x owner (keyed at `start`): totals that hold
    whichever grain interval a sample near a boundary is put in. Mean utilization is left out."""
    want: dict[Key, Bill] = defaultdict(Bill)
    for (uuid, owner, _), b in expected.items():
        w = want[(uuid, owner, start)]
        w.seconds += b.seconds
        w.busy += b.busy
        w.idle += b.idle
        w.energy += b.energy
        w.samples += b.samples
    have: dict[Key, dict] = {}
    for (uuid, owner, _), r in got.items():
        h = have.setdefault((uuid, owner, start), {"seconds_present": Decimal(0), "seconds_busy": Decimal(0),
                                                   "seconds_idle": Decimal(0), "energy_mj": 0})
        for k in ("seconds_present", "seconds_busy", "seconds_idle", "energy_mj"):
            h[k] += r[k] or 0
    return dict(want), have


def usage_rows(db: Path, gpus: Iterable[str] | None = None) -> dict[Key, dict]:
    """The database's gpu_usage rows by (gpu uuid, owner, interval start)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute("SELECT gpu_uuid, job_id, epoch(interval_start)::BIGINT AS t, seconds_present, "
                          "seconds_busy, seconds_idle, util_mean, energy_mj FROM gpu_usage")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()
    wanted = set(gpus) if gpus is not None else None
    return {(r["gpu_uuid"], r["job_id"], r["t"]): r for r in rows if wanted is None or r["gpu_uuid"] in wanted}


def _when(t: int) -> str:
    return dt.datetime.fromtimestamp(t, UTC).strftime("%H:%M")


def _fmt(x) -> str:
    """Exact where whole (seconds, millijoules), else to 6 decimals."""
    if x is None:
        return "-"
    if isinstance(x, (Fraction, Decimal, float)) and x == int(x):
        return str(int(x))
    return f"{float(x):.6f}".rstrip("0") if isinstance(x, (Fraction, Decimal, float)) else str(x)


def bill_mismatches(expected: dict[Key, Bill], got: dict[Key, dict], fields: Iterable[str],
                    names: dict[str, str] | None = None) -> list[str]:
    """One line per GPU x owner x interval whose stored row differs from the hand computation
    in any of `fields` (seconds, busy, idle, util, energy), or that only one side has."""
    names = names or {}
    lines = []
    for key in sorted(expected.keys() | got.keys(), key=lambda k: (k[0], k[1] or "", k[2])):
        uuid, owner, t = key
        where = f"{names.get(uuid, uuid)} {owner or '(unallocated)'} {_when(t)}"
        want, row = expected.get(key), got.get(key)
        if want is None:
            lines.append(f"{where}: stored {_fmt(row['seconds_present'])} s, {_fmt(row['energy_mj'])} mJ; "
                         "expected no row")
            continue
        if row is None:
            lines.append(f"{where}: expected {_fmt(want.seconds)} s, {_fmt(want.energy)} mJ "
                         f"({want.samples} samples); no row stored")
            continue
        diffs = []
        pairs = {"seconds": (want.seconds, row["seconds_present"]), "busy": (want.busy, row["seconds_busy"]),
                 "idle": (want.idle, row["seconds_idle"]), "energy": (want.energy, row["energy_mj"])}
        for f in fields:
            if f == "util":
                w, g = want.util_mean, row["util_mean"]
                if w is None or g is None or abs(w - g) > 1e-6 * max(1.0, abs(w)):
                    diffs.append(f"util_mean expected {_fmt(w)} got {_fmt(g)}")
            else:
                w, g = pairs[f]
                if g is None or Fraction(g) != w:
                    diffs.append(f"{f} expected {_fmt(w)} got {_fmt(g)}")
        if diffs:
            lines.append(f"{where} ({want.samples} samples): " + ", ".join(diffs))
    return lines


def totals(expected: dict[Key, Bill], got: dict[Key, dict]) -> str:
    """Seconds and energy in all, expected against stored: the one-line summary of a mismatch."""
    ws = sum((b.seconds for b in expected.values()), Fraction(0))
    gs = sum((Fraction(r["seconds_present"]) for r in got.values()), Fraction(0))
    we = sum((b.energy for b in expected.values()), Fraction(0))
    ge = sum((r["energy_mj"] or 0 for r in got.values()))
    return f"in all: {_fmt(ws)} s expected, {_fmt(gs)} s stored; {_fmt(we)} mJ expected, {_fmt(ge)} mJ stored"


# --------------------------------------------------------------------------- the CLI


def write_config(folder: Path, name: str, url: str, *, interval: int, grain: int) -> Path:
    """A config for `url` with the default [labels] and thresholds, one price for every model."""
    path = folder / f"{name}.toml"
    path.write_text(
        f'[cluster]\nname = "live"\n'
        f'[prometheus]\nurl = "{url}"\nretries = 1\nscrape_interval_seconds = {interval}\n'
        f'[ingest]\ngrain_seconds = {grain}\n'
        f'[pricing]\ndefault_price_per_gpu_hour = "2.00"\n', encoding="utf-8")
    return path


def iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_ingest(config: Path, db: Path, window: tuple[int, int]) -> subprocess.CompletedProcess:
    """`yolocost ingest --start --end` of the window into db, as an operator runs it."""
    return yolocost("--config", str(config), "--db", str(db), "ingest", "--start", iso(window[0]), "--end",
                    iso(window[1]), cwd=config.parent, timeout=CLI_TIMEOUT)


def query(db: Path, sql: str) -> list[dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()


@dataclass
class Stored:
    """What one store kept of the live scrape, and what the ingest made of it."""

    store: str
    url: str
    samples: dict[str, list[StoredSeries]] = field(default_factory=dict)
    ingest: subprocess.CompletedProcess | None = None
    db: Path | None = None
