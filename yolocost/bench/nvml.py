"""NVML (nvidia-ml-py): which GPUs a job holds, and readings served in dcgm-exporter's names.

For machines that run no dcgm-exporter, `DcgmCollector` serves DCGM_FI_DEV_GPU_UTIL,
DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_POWER_USAGE and DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION with the
labels the ingest reads (`gpu`, `UUID`, `device`, `modelName`, `hostname` as dcgm-exporter
names it since May 2026, and `GPU_I_ID` for a MIG instance; docs/prometheus-inputs.md). It reads the GPUs at each scrape, so the samples
are as fresh as the scrape, with no thread of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
import sys
from typing import Callable, Iterable

from ..errors import YolocostError


class NvmlUnavailable(YolocostError):
    """No NVIDIA driver (or no nvidia-ml-py) on this machine."""


@dataclass(frozen=True)
class Gpu:
    """One GPU (or MIG instance) a job holds, as dcgm-exporter labels it."""

    uuid: str  # the physical GPU's UUID (dcgm's `UUID`)
    index: int | None = None
    model: str | None = None
    instance: str | None = None  # MIG GPU instance id (dcgm's `GPU_I_ID`)


@dataclass(frozen=True)
class Reading:
    """One scrape's values of one GPU in dcgm-exporter's units."""

    gpu: Gpu
    util_percent: float | None  # None: NVML could not give this value (then it is not served)
    fb_used_mib: float | None
    power_w: float | None
    energy_mj: float | None


class Nvml:
    """An initialized NVML session; `open()` raises NvmlUnavailable where there is no driver."""

    def __init__(self, pynvml):
        self.nv = pynvml

    @classmethod
    def open(cls) -> "Nvml":
        try:
            import pynvml
        except ImportError:
            raise NvmlUnavailable("nvidia-ml-py is not installed (pip install 'yolocost[bench]')") from None
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise NvmlUnavailable(f"no NVIDIA driver here (NVML: {exc})") from None
        return cls(pynvml)

    def close(self) -> None:
        try:
            self.nv.nvmlShutdown()
        except self.nv.NVMLError:
            pass

    def _gpu(self, handle) -> Gpu:
        nv = self.nv
        name = nv.nvmlDeviceGetName(handle)
        return Gpu(uuid=_text(nv.nvmlDeviceGetUUID(handle)), index=nv.nvmlDeviceGetIndex(handle),
                   model=_text(name))

    def by_index(self, index: int) -> Gpu:
        try:
            return self._gpu(self.nv.nvmlDeviceGetHandleByIndex(index))
        except self.nv.NVMLError as exc:
            raise YolocostError(f"GPU {index}: not found through NVML ({exc})") from None

    def by_uuid(self, uuid: str) -> Gpu:
        """A GPU by its UUID; a MIG instance (MIG-...) as its parent GPU plus GPU_I_ID."""
        nv = self.nv
        try:
            handle = nv.nvmlDeviceGetHandleByUUID(uuid)
            if uuid.startswith("MIG-"):
                parent = nv.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(handle)
                gpu = self._gpu(parent)
                return Gpu(gpu.uuid, gpu.index, gpu.model, str(nv.nvmlDeviceGetGpuInstanceId(handle)))
            return self._gpu(handle)
        except nv.NVMLError as exc:
            raise YolocostError(f"GPU {uuid}: not found through NVML ({exc})") from None

    def read(self, gpus: Iterable[Gpu]) -> list[Reading]:
        """Current utilization, memory, power and energy counter of each GPU (MIG: its parent's).

        Only GPUs NVML resolved (they carry an index) are read: a UUID kept as the scheduler
        gave it is not NVML's to read. A GPU NVML cannot reach (lost, off the bus) gives no
        reading, a value it cannot give (no energy counter: NotSupported) is None."""
        nv = self.nv
        out = []
        for gpu in gpus:
            if gpu.index is None:
                continue
            try:
                handle = nv.nvmlDeviceGetHandleByUUID(gpu.uuid)
            except nv.NVMLError:
                continue
            out.append(self._reading(gpu, handle))
        return out

    def _reading(self, gpu: Gpu, handle) -> Reading:
        nv = self.nv

        def value(read: Callable[[], float]) -> float | None:
            try:
                return float(read())
            except nv.NVMLError:
                return None

        return Reading(
            gpu=gpu,
            util_percent=value(lambda: nv.nvmlDeviceGetUtilizationRates(handle).gpu),
            fb_used_mib=value(lambda: _fb_used_bytes(nv, handle) / 2**20),
            power_w=value(lambda: nv.nvmlDeviceGetPowerUsage(handle) / 1000.0),
            energy_mj=value(lambda: nv.nvmlDeviceGetTotalEnergyConsumption(handle)),
        )


def _fb_used_bytes(nv, handle) -> int:
    """Framebuffer memory in use as dcgm-exporter's DCGM_FI_DEV_FB_USED and nvidia-smi count it:
    without the memory the driver reserves for itself (DCGM serves that as FB_RESERVED).

    NVML's first memory call counts the reserve as used: on an idle H100 (driver 580) it gave
    480 MiB where nvidia-smi showed 0, a constant added to every job's peak memory. The v2
    call (drivers since R510) keeps the two apart; an older driver, or an nvidia-ml-py without
    it, falls back to the first."""
    version = getattr(nv, "nvmlMemory_v2", None)
    if version is not None:
        try:
            return nv.nvmlDeviceGetMemoryInfo(handle, version=version).used
        except nv.NVMLError:
            pass
    return nv.nvmlDeviceGetMemoryInfo(handle).used


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# dcgm-exporter metric -> (help, Reading attribute)
DCGM_METRICS = {
    "DCGM_FI_DEV_GPU_UTIL": ("GPU utilization (in %).", "util_percent"),
    "DCGM_FI_DEV_FB_USED": ("Framebuffer memory used (in MiB).", "fb_used_mib"),
    "DCGM_FI_DEV_POWER_USAGE": ("Power draw (in W).", "power_w"),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": ("Total energy consumption since boot (in mJ).", "energy_mj"),
}
# the labels as dcgm-exporter renders them (render_metrics.go)
DCGM_LABELS = ("gpu", "UUID", "device", "modelName", "hostname", "GPU_I_ID")


class DcgmCollector:
    """A prometheus-client collector serving `read()`'s readings under dcgm-exporter names.

    All four are served as gauges: dcgm-exporter declares the energy total a counter, but
    prometheus-client would rename a counter to `..._total`, and Prometheus stores both alike.
    A value that could not be read is left out. `collect()` never raises: prometheus-client
    would answer the whole scrape, job info included, with HTTP 500; a failed reading serves
    no DCGM series that scrape and is reported once through `warn` (default: stderr)."""

    def __init__(self, read: Callable[[], list[Reading]], hostname: str,
                 warn: Callable[[str], None] | None = None):
        self.read, self.hostname = read, hostname
        self.warn = warn if warn is not None else _to_stderr
        self.warned = False

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        try:
            readings = self.read()
            families = []
            for name, (doc, attr) in DCGM_METRICS.items():
                family = GaugeMetricFamily(name, doc, labels=DCGM_LABELS)
                for r in readings:
                    value = getattr(r, attr)
                    if value is None:
                        continue
                    index = "" if r.gpu.index is None else str(r.gpu.index)
                    family.add_metric([index, r.gpu.uuid, f"nvidia{index}", r.gpu.model or "", self.hostname,
                                       r.gpu.instance or ""], value)
                families.append(family)
        except Exception as exc:  # noqa: BLE001 - a scrape must never fail for the GPU readings
            if not self.warned:
                self.warned = True
                try:
                    self.warn(f"--gpu-sampler: reading the GPUs failed ({type(exc).__name__}: {exc}); "
                              "serving no DCGM metrics while it fails, job info goes on")
                except Exception:  # noqa: BLE001
                    pass
            return
        yield from families


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
