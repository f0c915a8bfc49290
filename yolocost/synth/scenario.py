"""What a Prometheus sample of the synthetic cluster shows, as arrays over its 30 s slots.

A few hosts of a planned month, some of their GPUs, and for each host the way its dcgm
series name their owner (the attribution modes of docs/prometheus-inputs.md). On top of the
plan: a MIG GPU, a GPU shared by two pods, a retried pod, an energy counter reset, scrape
gaps and an exporter outage. Slot k is the 30 s scrape slot starting at
`data_start + 30 k`; every target samples once per slot at its own offset into the slot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from . import people
from .constants import SAMPLE_SECONDS
from .fleet import Gpu, Host
from .plan import MonthPlan, PlannedJob
from .rng import stable_hex, stream

MODES = {
    "k8s": "Kubernetes; the scrape honors labels: namespace/pod/container",
    "k8s_exported": "Kubernetes; the scrape does not honor labels: exported_namespace/exported_pod/exported_container",
    "k8s_old": "Kubernetes; old exporter label names: pod_namespace/pod_name/container_name",
    "k8s_copied": "Kubernetes; namespace/pod/container plus the pod's labels copied onto the series",
    "slurm": "Slurm: hpc_job on the series, labels from yolocost_job_info",
    "job_info": "no owner labels on the series; owner and labels from yolocost_job_info",
}
K8S_MODES = ("k8s", "k8s_exported", "k8s_old", "k8s_copied")
HOSTNAME_LABEL = {"k8s": "Hostname", "k8s_exported": "Hostname", "k8s_old": "Hostname",
                  "k8s_copied": "hostname", "slurm": "Hostname", "job_info": "hostname"}


@dataclass(frozen=True)
class HostChoice:
    """A host of the plan shown in the sample: its attribution mode and which GPUs it shows."""

    host: str
    mode: str
    gpus: tuple[int, ...]


DEFAULT_START_DAY = 16  # 2026-10-17 00:00 local: unlabeled jobs, empty and digest-only tags, a counter reset
DEFAULT_HOSTS = (
    HostChoice("gpu-a100-03", "k8s", (0, 2, 5)),  # GPU 0 becomes MIG, GPU 2 is shared for a while
    HostChoice("gpu-a10g-01", "k8s_exported", (0, 3)),
    HostChoice("gpu-v100-01", "k8s_old", (0, 2)),
    HostChoice("gpu-a10g-02", "k8s_copied", (0, 1)),
    HostChoice("gpu-a100-02", "slurm", (3, 6, 7)),  # GPU 3: the plan's energy counter reset
    HostChoice("gpu-a10g-04", "job_info", (0, 1)),
)

LEAD_SLOTS = 10  # one grain before the window, so the window's first energy delta is defined
TAIL_SLOTS = 12  # runner scrapes after the window (an epoch ending in its last seconds)
SERVED_SCRAPES = 5  # epoch metrics and job results are served for this many scrapes
MAX_DELTA_SLOTS = 10  # a previous sample up to 10 slots back is within the 5-minute lookback
MIG_PROFILE, MIG_IDS, MIG_FB_MIB = "3g.40gb", (1, 2), 40192
REGISTRY = "registry.example"
K8S_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def k8s_suffix(seed: int, *parts: object, n: int = 5) -> str:
    """Random-looking pod name suffix as Kubernetes makes them."""
    h = int(stable_hex(seed, "pod", *parts, length=16), 16)
    out = []
    for _ in range(n):
        h, r = divmod(h, len(K8S_CHARS))
        out.append(K8S_CHARS[r])
    return "".join(out)


def namespace_for(seed: int, project: str | None) -> str:
    if project is None:
        return "ml-shared"
    slug = re.sub(r"[^a-z0-9-]+", "-", project.lower()).strip("-")
    return f"team-{slug or 'p' + stable_hex(seed, 'ns', project, length=6)}"


@dataclass
class Owner:
    """A job as the sample exposes it."""

    code: int  # plan job code, or an extra code >= len(plan.jobs)
    job_id: str  # as an ingest names it
    host: str
    mode: str
    project: str | None
    user: str
    model_type: str | None
    image_tag: str | None  # the job's real tag (the plan's): None = digest-only
    image_digest: str
    gpu_request: int | None = None
    epochs: int | None = None
    batch: int | None = None
    job_name: str | None = None  # batch.kubernetes.io/job-name of its pods; None for a bare pod
    pod_name: str | None = None  # a bare pod's name
    digest_label: bool = True  # job-info exposes image_digest
    plan: PlannedJob | None = None


@dataclass
class Pod:
    index: int
    owner: int
    host: str
    namespace: str
    name: str
    first: int  # slots in which the pod exists: [first, last)
    last: int


@dataclass
class Physical:
    """One physical GPU of the sample: what every series of it shares."""

    choice: HostChoice
    gpu: Gpu
    present: np.ndarray  # bool per slot: the exporter sent this GPU's series
    util: np.ndarray  # int16 percent (the plan's)
    fb: np.ndarray  # int32 MiB (the plan's)
    power: np.ndarray  # float64 W
    counter: np.ndarray  # int64 mJ as read
    owner: np.ndarray  # int32 plan job code holding the GPU per slot (-1: none)


@dataclass
class Device:
    """A whole GPU or a MIG instance: one family of dcgm series."""

    phys: Physical
    instance: int | None  # GPU_I_ID
    util: np.ndarray  # percent (whole GPU) or GR_ENGINE_ACTIVE ratio 0-1 (MIG instance)
    fb: np.ndarray
    owner_a: np.ndarray  # int32 owner code per slot, -1: none
    owner_b: np.ndarray  # a second owner sharing the GPU at that slot, -1: none

    @property
    def gpu_uuid(self) -> str:
        u = self.phys.gpu.uuid
        return u if self.instance is None else f"{u}/{self.instance}"

    @property
    def mig_profile(self) -> str | None:
        return None if self.instance is None else MIG_PROFILE


@dataclass
class Scenario:
    plan: MonthPlan
    seed: int
    cluster: str
    start: int  # window [start, end), local midnights
    end: int
    data_start: int  # first slot (start minus LEAD_SLOTS slots)
    n: int  # slots up to `end`
    hosts: list[HostChoice]
    host_objs: dict[str, Host]
    physicals: list[Physical]
    devices: list[Device]
    owners: dict[int, Owner]
    pods: list[Pod]
    timestamps: dict[str, np.ndarray]  # target -> int64 ms per slot (n + TAIL_SLOTS)
    specials: dict = field(default_factory=dict)

    @property
    def first_slot(self) -> int:
        return LEAD_SLOTS

    def slot_time(self, k: int) -> int:
        return self.data_start + SAMPLE_SECONDS * int(k)

    def mode_of(self, host: str) -> str:
        return next(h.mode for h in self.hosts if h.host == host)


def _plan_arrays(plan: MonthPlan, host: Host, base: int, n: int, choice: HostChoice) -> list[Physical]:
    out = []
    total = plan.window.n_samples
    for s in plan.host_samples(host):
        if s.gpu.index not in choice.gpus:
            continue
        full = {k: np.zeros(total, t) for k, t in (("present", bool), ("util", np.int16), ("fb", np.int32),
                                                     ("power", np.float64), ("counter", np.int64))}
        full["present"][s.sample] = True
        full["util"][s.sample], full["fb"][s.sample] = s.util, s.fb_used_mib
        full["power"][s.sample], full["counter"][s.sample] = s.power_w, s.energy_mj
        owner = np.full(n, -1, np.int32)
        for j in plan.jobs:  # ownership from the placements: defined while the exporter is silent too
            p = j.run.placement
            if p.host.name == host.name and s.gpu.index in p.gpu_indices:
                lo, hi = max(p.start - base, 0), min(p.start + p.samples - base, n)
                if lo < hi:
                    owner[lo:hi] = j.code
        cut = {k: v[base : base + n].copy() for k, v in full.items()}
        out.append(Physical(choice, s.gpu, cut["present"], cut["util"], cut["fb"], cut["power"], cut["counter"], owner))
    return out


def build_scenario(plan: MonthPlan, *, cluster: str, start: int, end: int, hosts) -> Scenario:
    """The sample of `hosts` (HostChoice or (host, mode, gpus)) for the window [start, end)."""
    by_name = {h.name: h for h in plan.hosts}
    choices = [h if isinstance(h, HostChoice) else HostChoice(h[0], h[1], tuple(h[2])) for h in hosts]
    for c in choices:
        if c.host not in by_name:
            raise ValueError(f"no host {c.host!r} in the plan (hosts: {', '.join(by_name)})")
        if c.mode not in MODES:
            raise ValueError(f"host {c.host}: unknown mode {c.mode!r} (modes: {', '.join(MODES)})")
        if not c.gpus or len(set(c.gpus)) != len(c.gpus) or any(not 0 <= g < len(by_name[c.host].gpus) for g in c.gpus):
            raise ValueError(f"host {c.host}: GPU indices {c.gpus} out of range or repeated")
    if not choices or len({c.host for c in choices}) != len(choices):
        raise ValueError("give at least one host, each once")
    data_start = start - LEAD_SLOTS * SAMPLE_SECONDS
    if data_start < plan.window.start or end > plan.window.end - TAIL_SLOTS * SAMPLE_SECONDS or end <= start:
        raise ValueError("the sample window must lie inside the planned month (with a day each side)")
    b = _Builder(plan, cluster, start, end, choices, by_name)
    b.scrape_trouble()
    b.counter_reset()
    b.plan_owners()
    b.devices_and_mig()
    b.shared_gpu()
    return b.finish()


class _Builder:
    def __init__(self, plan: MonthPlan, cluster: str, start: int, end: int, choices: list[HostChoice], by_name):
        self.plan, self.seed, self.cluster = plan, plan.seed, cluster
        self.start, self.end, self.choices, self.by_name = start, end, choices, by_name
        self.data_start = start - LEAD_SLOTS * SAMPLE_SECONDS
        self.n = (end - self.data_start) // SAMPLE_SECONDS
        base = (self.data_start - plan.window.start) // SAMPLE_SECONDS
        self.physicals = [p for c in choices for p in _plan_arrays(plan, by_name[c.host], base, self.n, c)]
        self.by_host = {c.host: [p for p in self.physicals if p.choice.host == c.host] for c in choices}
        self.owners: dict[int, Owner] = {}
        self.devices: list[Device] = []
        self.next_code = len(plan.jobs)
        self.specials: dict = {"exporter_outages": [], "short_gaps": [], "counter_resets": [], "missing_samples": {}}
        self.k8s_host = next((c for c in choices if c.mode == "k8s"),
                             next((c for c in choices if c.mode in K8S_MODES), None))

    def at(self, day: int, h: int, m: int = 0, s: int = 0) -> int:
        """Slot of a local-midnight-relative time on a day of the window (its last day if shorter)."""
        last_day = max((self.end - self.start) // 86400 - 1, 0)
        return LEAD_SLOTS + (min(day, last_day) * 86400 + h * 3600 + m * 60 + s) // SAMPLE_SECONDS

    def time(self, k: int) -> int:
        return int(self.data_start + SAMPLE_SECONDS * k)

    def host_for(self, mode: str, i: int) -> str:
        return next((c.host for c in self.choices if c.mode == mode), self.choices[min(i, len(self.choices) - 1)].host)

    def scrape_trouble(self) -> None:
        """Failed scrapes of a whole host now and then, single GPUs missing a sample, a 3.5-minute
        gap on one host and a 50-minute exporter outage on another."""
        rng = stream(self.seed, "prometheus-sample", self.start)
        n = self.n
        gap_host, outage_host = self.host_for("k8s_exported", 1), self.host_for("k8s_old", 2)
        gap = (self.at(0, 10, 2, 30), self.at(0, 10, 2, 30) + 7)
        outage = (self.at(1, 14, 7), self.at(1, 14, 7) + 100)
        calm = np.zeros(n, bool)  # no random misses here: gaps stay well away from the 5-minute lookback
        calm[: LEAD_SLOTS + 1] = True
        for lo, hi in (gap, outage):
            calm[max(lo - 12, 0) : hi + 12] = True
        for c in self.choices:
            host_miss = (rng.random(n) < 0.002) & ~calm
            for p in self.by_host[c.host]:
                p.present &= ~(host_miss | ((rng.random(n) < 0.0015) & ~calm))
        for host, (lo, hi), kind in ((gap_host, gap, "short_gaps"), (outage_host, outage, "exporter_outages")):
            for p in self.by_host[host]:
                p.present[lo:hi] = False
            self.specials[kind].append({"host": host, "from": self.time(lo), "to": self.time(hi), "slots": hi - lo})
        for d in self.plan.incidents.downtime:
            if d.hostname in self.by_host and d.start < self.end and d.end > self.start:
                self.specials["exporter_outages"].append(
                    {"host": d.hostname, "from": d.start, "to": d.end, "plan_downtime": True})

    def counter_reset(self) -> None:
        """An energy counter reset inside the window: the plan's, else one made here."""
        first = LEAD_SLOTS
        for p in self.physicals:
            k = first + np.flatnonzero(p.present[first:])
            for i in np.flatnonzero(np.diff(p.counter[k]) < 0):
                self.specials["counter_resets"].append(
                    {"uuid": p.gpu.uuid, "host": p.choice.host, "at": self.time(k[i + 1])})
        if self.specials["counter_resets"]:
            return
        p = next((q for q in self.physicals if q.choice.mode == "slurm"), self.physicals[0])
        pres = np.flatnonzero(p.present)
        k0 = int(pres[np.searchsorted(pres, self.at(2, 3, 12, 30))])
        steps = np.diff(p.counter[pres], prepend=p.counter[pres[0]])
        after = pres >= k0
        p.counter[pres[after]] = np.cumsum(steps[after])  # restarted from 0 just after the previous sample
        self.specials["counter_resets"].append(
            {"uuid": p.gpu.uuid, "host": p.choice.host, "at": self.time(k0), "made_here": True})

    def plan_owners(self) -> None:
        empty_seen = 0
        for p in self.physicals:
            for code in np.unique(p.owner[p.owner >= 0]).tolist():
                if code in self.owners:
                    continue
                j = self.plan.jobs[code]
                digest_label = True
                if p.choice.mode in ("slurm", "job_info") and j.labels.image_tag == "":
                    digest_label = empty_seen % 2 == 1  # every other empty tag comes without a digest too
                    empty_seen += 1
                lab, spec = j.labels, j.run.placement.spec
                self.owners[code] = Owner(
                    code, j.job_id, p.choice.host, p.choice.mode, lab.project, lab.user, spec.model_type,
                    lab.image_tag, lab.image_digest, spec.gpu_request, spec.epochs, spec.batch, job_name=j.job_id,
                    digest_label=digest_label, plan=j,
                )

    def new_owner(self, **kw) -> Owner:
        o = Owner(self.next_code, **kw)
        self.owners[o.code] = o
        self.next_code += 1
        return o

    def devices_and_mig(self) -> None:
        """A device per GPU; the first A100 of the Kubernetes host split into two 3g.40gb MIG
        instances: instance 1 runs the plan's jobs, instance 2 an evaluation job for 5 hours."""
        n, none = self.n, np.full(self.n, -1, np.int32)
        mig = None
        if self.k8s_host is not None:
            mig = next((p for p in self.by_host[self.k8s_host.host] if p.gpu.kind.key == "a100"), None)
        for p in self.physicals:
            if p is not mig:
                self.devices.append(Device(p, None, p.util.astype(np.float64), p.fb.copy(), p.owner.copy(),
                                           none.copy()))
                continue
            r = stream(self.seed, "mig", p.gpu.uuid, self.start)
            ratio1 = np.where(p.util > 0, np.round(np.clip(p.util / 100.0 + r.normal(0, 0.002, n), 0, 1), 6), 0.0)
            held = np.zeros(n, bool)
            lo = self.at(1, 9, 7, 30)
            held[lo : lo + 600] = True
            ratio2 = np.where(held, np.round(np.clip(r.normal(0.55, 0.06, n), 0.3, 0.75), 6), 0.0)
            fb2 = np.where(held, np.rint(r.normal(9000, 150, n)), 0).astype(np.int32)
            user = sorted(people.USERS)[int(r.integers(len(people.USERS)))]
            job_id = f"eval-{stable_hex(self.seed, 'mig-job', self.start, length=6)}"
            o = self.new_owner(job_id=job_id, host=p.choice.host, mode=p.choice.mode,
                               project=people.USERS[user][0][0], user=user, model_type="yolo11n",
                               image_tag="bench-yolo11-fast-cu124",
                               image_digest="sha256:" + stable_hex(self.seed, "image", "mig-eval"), job_name=job_id)
            self.devices.append(Device(p, MIG_IDS[0], ratio1, np.minimum(p.fb, MIG_FB_MIB), p.owner.copy(),
                                       none.copy()))
            self.devices.append(Device(p, MIG_IDS[1], ratio2, fb2, np.where(held, o.code, -1).astype(np.int32),
                                       none.copy()))
            self.specials["mig"] = {
                "uuid": p.gpu.uuid, "host": p.choice.host, "gpu": p.gpu.index, "profile": MIG_PROFILE,
                "instances": list(MIG_IDS), "second_job": job_id,
                "second_job_from": self.time(lo), "second_job_to": self.time(min(lo + 600, n)),
            }

    def shared_gpu(self) -> None:
        """A notebook pod (no job-name label) shares a training pod's GPU for 90 minutes from mid-grain."""
        if self.k8s_host is None:
            return
        length = 180
        for d in self.devices:
            if d.phys.choice.host != self.k8s_host.host or d.instance is not None:
                continue
            k0 = next((k for k in range(self.at(0, 14, 2, 30), self.n - length)
                       if d.owner_a[k] >= 0 and (d.owner_a[k : k + length] == d.owner_a[k]).all()), None)
            if k0 is None:
                continue
            job = self.owners[int(d.owner_a[k0])]
            slug = re.sub(r"[^a-z0-9]+", "-", job.user.lower()).strip("-") or "user"
            pod = f"notebook-{slug}-{k8s_suffix(self.seed, 'notebook', self.start)}"
            ns = namespace_for(self.seed, job.project)
            o = self.new_owner(job_id=f"{ns}/{pod}", host=job.host, mode=job.mode, project=job.project,
                               user=job.user, model_type=None, image_tag="dev",
                               image_digest="sha256:" + stable_hex(self.seed, "image", "notebook"), pod_name=pod)
            d.owner_b[k0 : k0 + length] = o.code
            self.specials["shared"] = {
                "uuid": d.phys.gpu.uuid, "host": job.host, "gpu": d.phys.gpu.index, "owners": [job.job_id, o.job_id],
                "from": self.time(k0), "to": self.time(k0 + length), "slots": length,
            }
            return

    def pods(self) -> list[Pod]:
        """One pod per Kubernetes job and host while it holds a GPU; the longest-held job's pod is replaced
        once half-way (a retry: same job-name label, new pod name)."""
        pods: list[Pod] = []
        k8s = {c.host for c in self.choices if c.mode in K8S_MODES}
        held: dict[int, list[np.ndarray]] = {}
        for d in self.devices:
            if d.phys.choice.host in k8s:
                for col in (d.owner_a, d.owner_b):
                    for code in np.unique(col[col >= 0]).tolist():
                        held.setdefault(code, []).append(np.flatnonzero(col == code))
        slots = {code: np.unique(np.concatenate(v)) for code, v in held.items()}
        in_window = {c: int((s >= LEAD_SLOTS).sum()) for c, s in slots.items() if self.owners[c].plan is not None}
        retried = max(in_window, key=lambda c: (in_window[c], c)) if in_window else None
        for code in sorted(slots):
            o, s = self.owners[code], slots[code]
            lo, hi = int(s[0]), min(int(s[-1]) + 3, self.n)  # kube-state-metrics sees a finished pod a little longer
            ns = namespace_for(self.seed, o.project)
            if o.pod_name:
                pods.append(Pod(len(pods), code, o.host, ns, o.pod_name, lo, hi))
            elif code == retried:
                mid = int(s[len(s) // 2])
                names = [f"{o.job_id}-{k8s_suffix(self.seed, o.job_id, i)}" for i in (1, 2)]
                pods.append(Pod(len(pods), code, o.host, ns, names[0], lo, mid))
                pods.append(Pod(len(pods), code, o.host, ns, names[1], mid, hi))
                self.specials["retried_pod"] = {"job_id": o.job_id, "pods": names, "switch": self.time(mid)}
            else:
                name = f"{o.job_id}-{k8s_suffix(self.seed, o.job_id, 1)}"
                pods.append(Pod(len(pods), code, o.host, ns, name, lo, hi))
        return pods

    def timestamps(self) -> dict[str, np.ndarray]:
        """Per scrape target: ms into each slot at which it is sampled, a fixed offset plus a little jitter."""
        out = {}
        for t in [f"dcgm:{c.host}" for c in self.choices] + [f"runner:{c.host}" for c in self.choices] + ["ksm"]:
            r = stream(self.seed, "scrape-offset", t, self.start)
            out[t] = int(r.integers(1_500, 27_500)) + r.integers(0, 40, self.n + TAIL_SLOTS)
        return out

    def finish(self) -> Scenario:
        for p in self.physicals:
            steps = np.diff(np.flatnonzero(p.present))
            # a gap is short (previous sample within the 5-minute lookback) or long (an outage), never in between
            assert not ((steps > MAX_DELTA_SLOTS - 1) & (steps < 40)).any(), f"{p.gpu.uuid}: gap near the lookback"
            self.specials["missing_samples"][f"{p.choice.host}/{p.gpu.index}"] = int((~p.present[LEAD_SLOTS:]).sum())
        pods = self.pods()
        return Scenario(self.plan, self.seed, self.cluster, self.start, self.end, self.data_start, self.n,
                        self.choices, self.by_name, self.physicals, self.devices, self.owners, pods,
                        self.timestamps(), self.specials)
