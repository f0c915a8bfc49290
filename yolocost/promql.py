"""The PromQL of the ingest's requests, each query with the reason for its shape (the store
probe's measuring queries, sent before them, are in storeprobe.py).

Every grain query is evaluated by `query_range` at the END of each grain interval (step =
grain) and aggregates the interval's samples server-side, so only grain-level points cross
the wire; the one exception is the energy counter of GPUs with one series at a time: its
last value per grain (`energy_last`) is differenced by the ingest, and only the grains that
cannot be settled so (an owner change, a gap, a reset) are read raw (`energy_samples`), which
costs the server a fraction of the per-step deltas (BENCHMARKS.md). The building blocks:

* `fresh(M)`: the sample of M in the `scrape_interval` before a subquery step, shifted by
  1 ms. With subquery steps on multiples of the scrape interval, every raw sample is seen by
  exactly one step, and the steps of one grain see exactly the samples in [start, end) (in
  milliseconds), so adjacent chunks neither share nor miss a sample. Prometheus 2.x ranges
  include both ends, hence the `- 1ms` there; 3.x and VictoriaMetrics ranges are left-open.
  Which one a server does is measured before the grain queries (storeprobe.py).
* `owners`: one series per GPU x owner at a step, valued 1/n when n owners share the GPU's
  sample (shared GPU, several Slurm jobs, two scrapes of one exporter): summing over owners
  never multiplies a GPU. Owners come from the dcgm series' own labels (pod, hpc_job), or
  from `yolocost_job_info` for GPUs whose series carry no owner.
* Per-GPU values (`max by (UUID, GPU_I_ID)`) joined onto `owners`, so a duplicated series
  counts once, and averages, busy/idle shares and energy split the same way as seconds.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

UTIL_DEV = "DCGM_FI_DEV_GPU_UTIL"
UTIL_PROF = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
FB_USED = "DCGM_FI_DEV_FB_USED"
POWER = "DCGM_FI_DEV_POWER_USAGE"
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
JOB_INFO = "yolocost_job_info"
POD_LABELS = "kube_pod_labels"
CONTAINER_INFO = "kube_pod_container_info"
EPOCH_METRIC = "yolocost_epoch_metric"
EPOCH_END = "yolocost_epoch_end_time_seconds"
JOB_RESULT = "yolocost_job_result"

UUID_LABELS = ("UUID", "uuid")  # dcgm-exporter's spelling, and its --use-old-namespace one
GPU_LABELS = "UUID, uuid, GPU_I_ID, GPU_I_PROFILE, gpu, modelName, Hostname, hostname"
# labels that make a dcgm series someone's (see docs/prometheus-inputs.md)
OWNER_LABELS = ("hpc_job", "exported_pod", "pod_name", "pod")
JOB_INFO_MARK = "yolocost_owner"  # added to owners that come from yolocost_job_info
LOOKBACK = 300  # seconds: how far back a counter's previous value is looked for (Prometheus' default lookback)


@dataclass(frozen=True)
class GrainQueries:
    """Parameters every grain query depends on."""

    scrape: int  # seconds between samples
    grain: int  # seconds per raw row
    busy: float
    idle: float
    utilization: str  # auto | dev | prof
    selector: str = ""  # extra label matchers, e.g. cluster="prod"
    left_open: bool = False  # ranges leave out their start (Prometheus 3, VictoriaMetrics): measured
    exported_jobs: tuple[str, ...] = ()  # scrape jobs whose series carry exported_pod
    job_info: bool = True  # the window holds yolocost_job_info series (else that join is left out)
    uuid: str = "UUID"  # the label naming a GPU: "uuid" where dcgm-exporter runs --use-old-namespace
    gpus: str = ""  # a matcher of the GPUs' UUIDs (`only`), e.g. '=~"GPU-a|GPU-b"'
    # some GPU has a series with an owner beside one without (dcgm-exporter
    # --kubernetes-virtual-gpus keeps the device-level one): measured, as it lengthens the queries
    device_series: bool = False

    @property
    def gpu(self) -> str:
        """The labels of a GPU or MIG instance (a MIG instance's UUID is its parent's)."""
        return f"{self.uuid}, GPU_I_ID"

    # ---- building blocks
    def _range(self, seconds: int) -> str:
        return f"{seconds * 1000 if self.left_open else seconds * 1000 - 1}ms"

    def _sel(self, metric: str, *extra: str) -> str:
        # yolocost_job_info names the GPU UUID whatever the exporter's spelling
        gpus = f"{'UUID' if metric == JOB_INFO else self.uuid}{self.gpus}" if self.gpus else ""
        matchers = [m for m in (self.selector, gpus, *extra) if m]
        return f"{metric}{{{', '.join(matchers)}}}" if matchers else metric

    def _fresh(self, metric: str, *extra: str, within: tuple[int, int] | None = None) -> str:
        """The last sample in the scrape interval before a step (less 1 ms); `within` (width,
        offset) in ms: in [t - offset - width, t - offset) instead."""
        width, offset = within or (self.scrape * 1000, 1)
        r = f"{width if self.left_open else width - 1}ms"
        return f"last_over_time({self._sel(metric, *extra)}[{r}] offset {offset}ms)"

    def util(self, *extra: str, within: tuple[int, int] | None = None) -> str:
        """Utilization in percent per dcgm series; profiling metric first where chosen."""
        dev, prof = self._fresh(UTIL_DEV, *extra, within=within), f"{self._fresh(UTIL_PROF, *extra, within=within)} * 100"
        if self.utilization == "dev":
            return dev
        if self.utilization == "prof":
            return f"({prof})"
        # `* 1` drops the metric name as `* 100` does: last_over_time keeps it, and a series
        # named at some steps and not at others would be two series to a subquery's function
        return f"({prof} or {dev} * 1)"

    def _unowned_util(self, within: tuple[int, int] | None = None) -> str:
        """Series with no owner label. Series of a scrape that renames the exporter's labels
        to exported_* carry the exporter's own pod, which does not make them owned."""
        base = ('hpc_job=""', 'exported_pod=""', 'pod_name=""')
        parts = [self.util(*base, 'pod=""', within=within)]
        if self.exported_jobs:
            jobs = "|".join(re.escape(j) for j in self.exported_jobs)
            parts.append(self.util(*base, f'job=~"{_quote(jobs)}"', within=within))
        return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"

    def _held_util(self) -> str:
        """The utilization series that stand for owners: a GPU's owned series where it has any
        at the step, else its unowned ones. dcgm-exporter --kubernetes-virtual-gpus keeps the
        device-level series (no pod) beside one per sharing pod: the device is not one more
        owner."""
        if not self.device_series:
            return self.util()
        free = self._unowned_util()
        return f"(({self.util()} unless {free}) or on({self.gpu}) {free})"

    def owners(self) -> str:
        """One series per GPU x owner per step, valued 1/(owners of that GPU at that step)."""
        u = self._held_util()
        series = f"({u} * 0 + 1) / on({self.gpu}) group_left() (count by ({self.gpu}) ({u}))"
        if not self.job_info:  # the join costs the server more than the rest: skip it when idle
            return series
        job_info = self._fresh(JOB_INFO)
        if self.uuid != "UUID":  # yolocost_job_info names the GPU UUID, as the runner writes it
            job_info = f'label_replace({job_info}, "{self.uuid}", "$1", "UUID", "(.+)")'
        claims = f"({job_info} / on({self.gpu}) group_left() (count by ({self.gpu}) ({job_info})))"
        gpus = f"topk by ({self.gpu}) (1, group by ({GPU_LABELS}) ({self._unowned_util()}))"
        by_job_info = (
            f'label_replace({claims} * on({self.gpu}) group_left(GPU_I_PROFILE, gpu, modelName, Hostname, hostname) '
            f'({gpus}), "{JOB_INFO_MARK}", "job_info", "", "")'
        )
        return f"(({series}) unless on({self.gpu}) {by_job_info}) or {by_job_info}"

    def _per_gpu(self, expr: str) -> str:
        return f"max by ({self.gpu}) ({expr})"

    def _sub(self, expr: str) -> str:
        return f"({expr})[{self._range(self.grain)}:{self.scrape}s]"

    def _instances(self) -> str:
        """MIG instances present per physical GPU (1 for a whole GPU)."""
        return f"count by ({self.uuid}) (count by ({self.gpu}) ({self.util()}))"

    def _energy_delta(self) -> str:
        """Counter increase per physical GPU since the previous step; a drop is a reset.

        The last value within LOOKBACK reaches back over short scrape gaps, so the first
        sample after a gap gets the whole gap's energy, as its owner used it. Spelled as
        `last_over_time` rather than an instant selector: Prometheus looks an instant selector
        back 5 minutes, VictoriaMetrics only about a scrape interval."""
        def last(offset_ms: int) -> str:
            return f"max by ({self.uuid}) (last_over_time({self._sel(ENERGY)}[{self._range(LOOKBACK)}] offset {offset_ms}ms))"

        now, before = last(1), last(self.scrape * 1000 + 1)
        return f"(({now} - {before}) >= 0 or ({now} < {before}))"

    # ---- the grain queries: name -> PromQL, one value per owner series per grain
    def _own(self, o: str, op: str, own: str, per_gpu: str) -> str:
        """`o op value` where each owner series takes its own series' value (same labels: a
        pod's own utilization or memory where the exporter gives one, as in virtual-GPU
        mode), and a job-info owner its GPU's."""
        if not self.device_series:  # every owner's series carries its GPU's values
            return f"({o} {op} on({self.gpu}){'' if op == 'and' else ' group_left()'} {per_gpu})"
        if op == "and":
            return f"(({o} and {own}) or (({o} unless {self.util()}) and on({self.gpu}) {per_gpu}))"
        return f"(({o} {op} {own}) or ({o} {op} on({self.gpu}) group_left() {per_gpu}))"

    def grain_queries(self) -> dict[str, str]:
        o = f"({self.owners()})"
        own_u = self.util()
        u = self._per_gpu(own_u)
        fb = self._fresh(FB_USED)
        per_instance = f"on({self.uuid}) group_left() ({self._instances()})"
        return {
            # samples held (1/n when shared); x scrape interval = seconds_present
            "samples": f"sum_over_time({self._sub(o)})",
            # samples above the busy threshold: the basis of effective compute density. A filter
            # (`and`, `>` without bool) keeps labels as they are, which costs the server a
            # fraction of what `> bool` does (that rebuilds every sample's label set)
            "busy": f"sum_over_time({self._sub(self._own(o, 'and', f'({own_u} > {self.busy:g})', f'({u} > {self.busy:g})'))})",
            # samples below the idle threshold: idle waste
            "idle": f"sum_over_time({self._sub(self._own(o, 'and', f'({own_u} < {self.idle:g})', f'({u} < {self.idle:g})'))})",
            # utilization summed over held samples; / samples = mean utilization
            "util": f"sum_over_time({self._sub(self._own(o, '*', own_u, f'({u})'))})",
            # peak framebuffer while held
            "mem_peak": f"max_over_time({self._sub(self._own(f'{o} * 0', '+', fb, f'({self._per_gpu(fb)})'))})",
            # power summed over held samples; / samples = mean power. MIG instances report
            # their parent's power, so the energy cross-check below splits it per instance
            "power": f"sum_over_time({self._sub(f'{o} * on({self.gpu}) group_left() ({self._per_gpu(self._fresh(POWER))})')})",
            "power_energy": "sum_over_time(" + self._sub(
                f"{o} * on({self.uuid}) group_left() (max by ({self.uuid}) ({self._fresh(POWER)})) / {per_instance}"
            ) + ")",
            # counter deltas of the physical GPU given to the owners of the later sample
            "energy": "sum_over_time(" + self._sub(f"{o} * on({self.uuid}) group_left() {self._energy_delta()} / {per_instance}") + ")",
        }

    # ---- the cheap path: GPUs with one series at a time, no job-info claims, no MIG
    def only(self, uuids: list[str], keep: bool) -> "GrainQueries":
        """The same queries restricted to (keep) or excluding (not keep) some GPUs by UUID."""
        op = "=~" if keep else "!~"
        regex = "|".join(re.escape(u) for u in sorted(uuids))
        return dataclasses.replace(self, gpus=f'{op}"{_quote(regex)}"')

    def _raw(self, fn: str, metric: str, seconds: int) -> str:
        """`fn` over the raw samples of the `seconds` before a step (less 1 ms, as `fresh`):
        every stored sample counts once, wherever in its scrape interval it was stamped."""
        return f"{fn}({self._sel(metric)}[{self._range(seconds)}] offset 1ms)"

    def _raw_util(self, fn: str, scale: bool = True) -> str:
        """`_raw` of the utilization metric(s) (the profiling one x 100 where `scale`). `auto`
        takes the profiling metric where a series has it (its sums), and counts samples from
        DCGM_FI_DEV_GPU_UTIL where it has that (`scale` False): the series x grains where the
        two counts differ (profiling paused part of the time) are counted from raw samples,
        one timestamp at a time (`prof_samples`)."""
        dev = self._raw(fn, UTIL_DEV, self.grain)
        prof = self._raw(fn, UTIL_PROF, self.grain) + (" * 100" if scale else "")
        if self.utilization == "dev":
            return dev
        if self.utilization == "prof":
            return f"({prof})"
        return f"({prof} or {dev})" if scale else f"({dev} or {prof})"

    def plain_queries(self) -> dict[str, str]:
        """Per-series queries for GPUs that `special_gpus` did not flag: each dcgm series is
        one owner's (or nobody's) at every sample, so no attribution join is needed, which
        makes these an order of magnitude cheaper for the server than `grain_queries`.

        Samples, utilization, memory and power are read over raw ranges: exact for any
        scrape offset, lateness or jitter. Busy and idle need a filter on each sample, which
        PromQL applies only at subquery steps (one per scrape interval): those count a
        sample per step, and `slots` counts the steps that hold one. Where `slots` is less
        than `samples`, two samples fell into one step (a scrape stamped late, past a step
        boundary) and the ingest counts samples, busy, idle and utilization of that series x
        grain from the raw samples instead (`raw_util_samples`; ingest/decoding.py `raw_utilization`).
        In `auto` mode the same goes for the grains where a series' profiling metric has
        other samples than DCGM_FI_DEV_GPU_UTIL (`prof_samples`)."""
        u = self.util()
        auto = {"prof_samples": self._raw("count_over_time", UTIL_PROF, self.grain)} if self.utilization == "auto" else {}
        return {
            **auto,
            "samples": self._raw_util("count_over_time", scale=False),
            "slots": f"count_over_time({self._sub(u)})",
            # counted through a filter, not summed as `> bool` (see grain_queries); an interval
            # with no such sample has no point, which the ingest reads as 0
            "busy": f"count_over_time({self._sub(f'{u} > {self.busy:g}')})",
            "idle": f"count_over_time({self._sub(f'{u} < {self.idle:g}')})",
            "util": self._raw_util("sum_over_time"),
            "mem_peak": self._raw("max_over_time", FB_USED, self.grain),
            "power": self._raw("sum_over_time", POWER, self.grain),
            # energy: no per-step deltas here (they cost the server the most of all). Summed over
            # a grain, a counter's deltas come to its last value minus the one before wherever
            # nothing interrupts them: these give each series' last value and sample count per
            # grain, `energy_resets` the series whose counter dropped, and the ingest differences
            # the values where that settles a grain (ingest/energy.py `telescoped_energy`); the other
            # grains it computes from raw samples (`energy_samples`)
            "energy_last": self._raw("last_over_time", ENERGY, self.grain),
            "energy_count": self._raw("count_over_time", ENERGY, self.grain),
        }

    def raw_util_samples(self, seconds: int) -> str:
        """The utilization metric(s)' raw samples of the `seconds` before a time (less 1 ms,
        as `fresh`): what busy and idle are counted from where a subquery step held two."""
        names = {"dev": (UTIL_DEV,), "prof": (UTIL_PROF,)}.get(self.utilization, (UTIL_DEV, UTIL_PROF))
        pattern = "|".join(map(re.escape, names))
        return f'{self._sel("", f"__name__=~{chr(34)}{_quote(pattern)}{chr(34)}")}[{self._range(seconds)}] offset 1ms'

    def series_counts(self) -> dict[str, str]:
        """Per utilization series, its raw samples and the subquery steps holding one: for the
        joined GPUs, whose owners are decided per step, a difference means samples the grain
        queries could not count (`slots` above)."""
        return {"series_samples": self._raw_util("count_over_time", scale=False),
                "series_slots": f"count_over_time({self._sub(self.util())})"}

    def energy_resets(self, seconds: int) -> str:
        """Energy series whose counter drops in the `seconds` before a time (less 1 ms, as
        `fresh`), the step from the sample one scrape interval before them included."""
        return f"resets({self._sel(ENERGY)}[{self._range(seconds + self.scrape)}] offset 1ms) > 0"

    def energy_samples(self, seconds: int) -> str:
        """The energy counter's raw samples of the `seconds` + LOOKBACK before a time (less 1 ms,
        as `fresh`): what the plain path's energy is computed from, client-side, exactly as
        `_energy_delta` defines it (each step's last value within LOOKBACK, per GPU the max
        over its series; a drop is a reset) and given to the series present at that step
        (see ingest/energy.py `energy_points`), for the grains `energy_last` does not settle."""
        return f"{self._sel(ENERGY)}[{self._range(seconds + LOOKBACK)}] offset 1ms"

    def _count_in(self, within: tuple[int, int]) -> str:
        """Per GPU, its utilization series with a sample in [t - offset - width, t - offset) (ms)."""
        return f"count by ({self.gpu}) ({self.util(within=within)})"

    def _halves(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The later and the earlier half of the scrape interval before a step, as `within`."""
        p, half = self.scrape * 1000, self.scrape * 500
        return (half, 1), (p - half, half + 1)

    def several_series(self, seconds: int) -> str:
        """GPUs with more than one series in some scrape step of the last `seconds`: the
        candidates for `special_gpus`, found at a fraction of its cost."""
        return f"max_over_time((count by ({self.gpu}) ({self.util()}))[{self._range(seconds)}:{self.scrape}s]) > 1"

    def special_gpus(self, seconds: int) -> str:
        """GPUs with more than one series at a sample of the last `seconds` (shared GPU,
        duplicated scrape, owner change within one sample): they need the attribution join.
        More than one in one scrape step alone is not enough: the old owner's last sample of
        an owner change, stamped late past the step boundary, shares a step with the new
        owner's first, a scrape interval apart. Two series of one sample are closer than half
        an interval (one scrape: the same time), and duplicated scrapes go on for more than
        one step, so a GPU needs the join where a step holds two series and either half of
        it does too, or the step before does.
        Where discovery saw device-level series beside owned ones (`device_series`), also the
        GPUs that hold both at one sample, marked `device_series="1"`: only their queries
        need the longer form that leaves the device-level series out of the owners."""
        r = f"[{self._range(seconds)}:{self.scrape}s]"
        p = self.scrape * 1000
        step, before = self._count_in((p, 1)), self._count_in((p, p + 1))
        late, early = (self._count_in(h) for h in self._halves())
        together = f"({before} > 1 or {late} > 1 or {early} > 1)"
        shared = f"max_over_time(({step} > 1 and on({self.gpu}) {together}){r}) > 1"
        if not self.device_series:
            return shared

        def both(within: tuple[int, int]) -> str:  # one scrape: owned and unowned series at one time
            free = self._unowned_util(within)
            return (f"count by ({self.gpu}) ({self.util(within=within)} unless {free}) "
                    f"and on({self.gpu}) count by ({self.gpu}) ({free})")

        device = " or ".join(f"({both(h)})" for h in self._halves())
        return f'{shared} or label_replace(max_over_time(({device}){r}), "device_series", "1", "", "")'

    # ---- checks and metadata
    def selector_for(self, metric: str) -> str:
        return self._sel(metric)

    def any_of(self, metrics: tuple[str, ...]) -> str:
        """The series of any of `metrics` (and the configured matchers), for the names API."""
        return self._sel("", f'__name__=~"{_quote("|".join(map(re.escape, metrics)))}"')

    def last_values(self, metric: str, seconds: int, by: tuple[str, ...]) -> str:
        """Last value per `by` labels within a step: training progress is sparse, gauges by epoch.
        Aggregating by the labels that identify a value drops the scrape's own labels (less to
        send and parse: a job has one series per epoch and metric) and folds the copies of a
        runner scraped twice (two scrape jobs, an HA pair) into one."""
        return f"max by ({', '.join(by)}) (last_over_time({self._sel(metric)}[{seconds}s]))"


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def matcher(label: str, value: str) -> str:
    return f'{label}="{_quote(value)}"'
