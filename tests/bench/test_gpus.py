"""Which GPUs a run holds (CUDA_VISIBLE_DEVICES as a scheduler sets it), NVML's clean failure,
and the dcgm-named series the sampler serves."""

from __future__ import annotations

import pytest

from yolocost.bench import gpus
from yolocost.bench.nvml import DcgmCollector, Gpu, Nvml, NvmlUnavailable, Reading
from yolocost.errors import YolocostError

UUIDS = ["GPU-5f3c2a10-8d4e-4b6a-9c1f-0a1b2c3d4e5f", "GPU-00000000-1111-2222-3333-444444444444"]


def no_nvml():
    raise NvmlUnavailable("no NVIDIA driver here (NVML: NVML Shared Library Not Found)")


class FakeNvml:
    """NVML's answers on a two-GPU node."""

    def by_index(self, index):
        return Gpu(UUIDS[index], index, "NVIDIA L4")

    def by_uuid(self, uuid):
        return Gpu(uuid, UUIDS.index(uuid), "NVIDIA L4")


def test_uuids_from_the_scheduler_need_no_driver(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", ",".join(UUIDS))
    held, notes = gpus.held_gpus("cpu", no_nvml)  # training on CPU does not change the allocation
    assert held == [Gpu(UUIDS[0]), Gpu(UUIDS[1])] and notes == []


def test_uuids_get_index_and_model_where_nvml_answers(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", UUIDS[1])
    assert gpus.held_gpus(None, FakeNvml)[0] == [Gpu(UUIDS[1], 1, "NVIDIA L4")]


def test_indices_are_resolved_through_nvml(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert gpus.held_gpus(None, FakeNvml)[0] == [Gpu(UUIDS[1], 1, "NVIDIA L4")]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert [g.uuid for g in gpus.held_gpus("0,1", FakeNvml)[0]] == UUIDS
    assert gpus.held_gpus("cpu", FakeNvml) == ([], [])


def test_indices_without_a_driver_say_so(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    held, notes = gpus.held_gpus(None, no_nvml)
    assert held == [] and len(notes) == 1 and "no GPU time is attributed" in notes[0]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpus.held_gpus(None, no_nvml) == ([], [])
    # --device 1 asks for a GPU: without a driver that is said; asking for nothing says nothing
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    held, notes = gpus.held_gpus("1", no_nvml)
    assert held == [] and len(notes) == 1 and notes[0].startswith("GPU(s) 1 cannot be named")
    assert gpus.held_gpus(None, no_nvml) == ([], [])


def test_nvml_without_driver_is_one_clean_line():
    try:
        Nvml.open().close()
    except NvmlUnavailable as exc:
        message = str(exc)
        assert "\n" not in message and "NVML" in message
        assert isinstance(exc, YolocostError)
    else:
        pytest.skip("an NVIDIA driver is present here")


def test_dcgm_collector_uses_dcgm_names_and_labels():
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    registry = CollectorRegistry()
    reading = Reading(Gpu(UUIDS[0], 0, "NVIDIA L4"), 87.0, 1024.0, 61.5, 123456.0)
    registry.register(DcgmCollector(lambda: [reading], "node7"))
    served = {s.name: (s.labels, s.value) for family in text_string_to_metric_families(generate_latest(registry).decode())
              for s in family.samples}
    # the host label as current dcgm-exporter renders it: `hostname` (it wrote `Hostname` before May 2026)
    labels = {"gpu": "0", "UUID": UUIDS[0], "device": "nvidia0", "modelName": "NVIDIA L4", "hostname": "node7",
              "GPU_I_ID": ""}
    assert served == {"DCGM_FI_DEV_GPU_UTIL": (labels, 87.0), "DCGM_FI_DEV_FB_USED": (labels, 1024.0),
                      "DCGM_FI_DEV_POWER_USAGE": (labels, 61.5),
                      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": (labels, 123456.0)}


def test_a_uuid_nvml_does_not_know_is_kept_as_given(monkeypatch):
    class OtherNode(FakeNvml):
        def by_uuid(self, uuid):
            raise YolocostError(f"GPU {uuid}: not found through NVML (Not Found)")

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", UUIDS[0])
    held, notes = gpus.held_gpus(None, OtherNode)
    assert held == [Gpu(UUIDS[0])] and len(notes) == 1 and "using the UUID as given" in notes[0]
