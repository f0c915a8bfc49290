"""--gpu-sampler: an NVML error costs the DCGM value it concerns, never the scrape.

prometheus-client answers a whole scrape with HTTP 500 when one collector's collect()
raises, so a GPU without an energy counter, a UUID NVML does not know or a GPU that fell off
the bus must not take yolocost_job_info down with it. NVML is faked here (as in test_gpus.py):
these faults cannot be produced on a machine without an NVIDIA GPU.
"""

from __future__ import annotations

import datetime as dt

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from yolocost.bench.metrics import JobMetrics  # noqa: E402
from yolocost.bench.nvml import DcgmCollector, Gpu, Nvml  # noqa: E402

GOOD, LOST, UNKNOWN = ("GPU-5f3c2a10-8d4e-4b6a-9c1f-0a1b2c3d4e5f", "GPU-00000000-1111-2222-3333-444444444444",
                       "GPU-99999999-aaaa-bbbb-cccc-dddddddddddd")


class FakePynvml:
    """pynvml on a node where GPU 0 has no energy counter and GPU 1 fell off the bus."""

    class NVMLError(Exception):
        pass

    class NVMLError_NotSupported(NVMLError):
        pass

    class NVMLError_GpuIsLost(NVMLError):
        pass

    class NVMLError_NotFound(NVMLError):
        pass

    def __init__(self):
        self.asked: list[str] = []

    def nvmlDeviceGetHandleByUUID(self, uuid):
        self.asked.append(uuid)
        if uuid == LOST:
            raise self.NVMLError_GpuIsLost("GPU is lost")
        if uuid != GOOD:
            raise self.NVMLError_NotFound("Not Found")
        return "handle0"

    def nvmlDeviceGetUtilizationRates(self, handle):
        return type("Util", (), {"gpu": 87})()

    def nvmlDeviceGetMemoryInfo(self, handle):
        return type("Mem", (), {"used": 1024 * 2**20})()

    def nvmlDeviceGetPowerUsage(self, handle):
        return 61500

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        raise self.NVMLError_NotSupported("Not Supported")


HELD = [Gpu(GOOD, 0, "NVIDIA L4"), Gpu(LOST, 1, "NVIDIA L4"), Gpu(UNKNOWN)]  # UNKNOWN: kept as given


def _metrics() -> JobMetrics:
    metrics = JobMetrics("lb-v8n")
    metrics.hold({"project": "vision", "user": "alice", "model_type": "yolov8n", "image_tag": "t",
                  "image_digest": "", "epochs": "3", "imgsz": "64", "batch": "8"}, HELD, "node7",
                 dt.datetime(2026, 11, 2, tzinfo=dt.timezone.utc))
    return metrics


def _scrape(metrics: JobMetrics) -> dict[str, list[dict[str, str]]]:
    served: dict[str, list] = {}
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for s in family.samples:
            served.setdefault(s.name, []).append((s.labels, s.value))
    return served


def test_nvml_errors_cost_only_the_value_or_gpu_they_concern():
    nv = FakePynvml()
    (reading,) = Nvml(nv).read(HELD)
    assert (reading.gpu.uuid, reading.util_percent, reading.fb_used_mib, reading.power_w, reading.energy_mj) == \
        (GOOD, 87.0, 1024.0, 61.5, None)
    assert UNKNOWN not in nv.asked  # a GPU NVML did not resolve is never sampled


def test_scrape_serves_what_nvml_could_read_and_job_info():
    metrics = _metrics()
    nv = FakePynvml()
    metrics.add_collector(DcgmCollector(lambda: Nvml(nv).read(HELD), "node7"))
    served = _scrape(metrics)
    assert len(served["yolocost_job_info"]) == 3
    assert [labels["UUID"] for labels, _ in served["DCGM_FI_DEV_POWER_USAGE"]] == [GOOD]
    assert "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" not in served  # not supported: not served


def test_a_failing_reading_never_fails_the_scrape():
    def broken():
        raise FakePynvml.NVMLError("Driver Not Loaded")

    warnings: list[str] = []
    metrics = _metrics()
    metrics.add_collector(DcgmCollector(broken, "node7", warn=warnings.append))
    for _ in range(2):
        served = _scrape(metrics)
        assert len(served["yolocost_job_info"]) == 3
        assert not any(name.startswith("DCGM_") for name in served)
    assert len(warnings) == 1 and "Driver Not Loaded" in warnings[0] and "\n" not in warnings[0]


def test_a_failing_reading_is_told_on_stderr_by_default(capsys):
    def broken():
        raise FakePynvml.NVMLError_GpuIsLost("GPU is lost")

    metrics = _metrics()
    metrics.add_collector(DcgmCollector(broken, "node7"))
    _scrape(metrics)
    _scrape(metrics)
    err = capsys.readouterr().err
    assert err.count("--gpu-sampler") == 1 and "GPU is lost" in err


class ReservingPynvml(FakePynvml):
    """pynvml as nvidia-ml-py 12+ is, on a driver that keeps a reserve: the first memory call
    counts the reserve as used, the v2 call keeps it apart (an H100 with driver 580, idle:
    480 MiB used by the first, 0 by nvidia-smi). `v2` False: a driver without the v2 call."""

    nvmlMemory_v2 = 0x02000028

    def __init__(self, v2: bool = True):
        super().__init__()
        self.v2 = v2

    def nvmlDeviceGetMemoryInfo(self, handle, version=None):
        if version is None:
            return type("Mem", (), {"used": (4096 + 480) * 2**20})()
        if not self.v2:
            raise self.NVMLError("Function Not Found")
        assert version == self.nvmlMemory_v2
        return type("Mem", (), {"used": 4096 * 2**20, "reserved": 480 * 2**20})()


def test_memory_used_leaves_out_the_drivers_reserve_as_dcgm_does():
    (reading,) = Nvml(ReservingPynvml()).read(HELD)
    assert reading.fb_used_mib == 4096.0
    (older,) = Nvml(ReservingPynvml(v2=False)).read(HELD)
    assert older.fb_used_mib == 4096.0 + 480  # no v2 call: the first one's figure, not nothing
