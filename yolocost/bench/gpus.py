"""Which GPUs a benchmark run holds: the scheduler's CUDA_VISIBLE_DEVICES, else --device.

This is the one place the runner reads the environment. A scheduler (Slurm, Kubernetes'
device plugin) hands a job its GPUs as CUDA_VISIBLE_DEVICES, by UUID (GPU-..., MIG-...) or by
index; the job's accounting follows that allocation, whatever device the training itself
uses (it may run on CPU). UUIDs are taken as they are (NVML adds index and model where a
driver exists); indices need NVML to become UUIDs.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable

from ..errors import YolocostError
from .nvml import Gpu, Nvml, NvmlUnavailable

VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


def visible_devices() -> str | None:
    """The scheduler's GPU allocation for this process, if any."""
    return os.environ.get(VISIBLE_DEVICES)


def _indices(device: str | None) -> list[int]:
    """GPU indices named by an Ultralytics device string: '0', '0,1', 'cuda:1'; none for cpu/mps."""
    text = (device or "0").strip().lower()
    if text in ("cpu", "mps", "-1"):
        return []
    return [int(n) for n in re.findall(r"\d+", text)]


def held_gpus(device: str | None, nvml: Callable[[], Nvml]) -> tuple[list[Gpu], list[str]]:
    """(GPUs this run holds, notes for the user). `nvml` opens NVML (may raise NvmlUnavailable)."""
    visible = visible_devices()
    entries = [e.strip() for e in (visible or "").split(",") if e.strip()]
    if visible is not None and not entries:
        return [], []  # an empty CUDA_VISIBLE_DEVICES hides every GPU
    uuids = [e for e in entries if e.startswith(("GPU-", "MIG-"))]
    if entries and len(uuids) == len(entries):
        try:
            session = nvml()
        except NvmlUnavailable:
            notes = [f"{VISIBLE_DEVICES} names MIG instance {u}, which needs NVML to become its GPU's UUID and "
                     "GPU_I_ID; using it as it is" for u in uuids if u.startswith("MIG-")]
            return [Gpu(uuid=u) for u in uuids], notes
        return _named(session.by_uuid, uuids)
    indices = [int(e) for e in entries if e.isdigit()] if entries else _indices(device)
    if not indices:
        return [], []
    try:
        session = nvml()
    except NvmlUnavailable as exc:
        if not entries and device is None:  # nothing asked for a GPU, and there is no driver: none held
            return [], []
        return [], [f"GPU(s) {','.join(map(str, indices))} cannot be named without NVML ({exc}): "
                    "the job-info series carries no UUID, so no GPU time is attributed to this job"]
    return _named(session.by_index, indices)


def _named(lookup: Callable[[Any], Gpu], keys: list) -> tuple[list[Gpu], list[str]]:
    """NVML's view of each GPU; a UUID NVML does not know (another node's, a test's) is kept as
    the scheduler gave it (for job info; with no index, the GPU sampler does not read it), an
    unknown index is dropped; either with a note."""
    found, notes = [], []
    for key in keys:
        try:
            found.append(lookup(key))
        except YolocostError as exc:
            notes.append(f"{exc}; " + ("using the UUID as given" if isinstance(key, str) else "not counted"))
            if isinstance(key, str):
                found.append(Gpu(uuid=key))
    return found, notes
