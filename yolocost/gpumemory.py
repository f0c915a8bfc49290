"""The nominal memory of known GPU models: the one table of it.

The data holds each GPU's framebuffer in use (DCGM_FI_DEV_FB_USED) but not its size (FB_FREE
is not scraped), so the memory of a GPU model comes from GPU_MEMORY_GIB. The reports read it
here (yolocost.report.gpufit); the named queries read the same rows from the view
`gpu_memory` that yolocost.db creates from this table in every database it writes.
"""

from __future__ import annotations

import re

# Nominal memory (GiB) of known GPU models, by the name dcgm-exporter reports (modelName)
# less "NVIDIA "/"Tesla ". Bare names ("A100") that stand for several sizes are left out.
GPU_MEMORY_GIB: dict[str, int] = {
    "A100-SXM4-80GB": 80, "A100 80GB PCIe": 80, "A100-PCIE-80GB": 80,
    "A100-SXM4-40GB": 40, "A100-PCIE-40GB": 40, "A100 40GB": 40,
    "A800-SXM4-80GB": 80, "A800 80GB PCIe": 80,
    "H100 80GB HBM3": 80, "H100-SXM5-80GB": 80, "H100 PCIe": 80, "H100": 80, "H800": 80,
    "H100 NVL": 94, "H200": 141, "H200 NVL": 141, "GH200 480GB": 96,
    "A10G": 24, "A10": 24, "A30": 24, "A40": 48, "A16": 16, "A2": 16,
    "L4": 24, "L40": 48, "L40S": 48,
    "T4": 16,
    "V100-SXM2-16GB": 16, "V100-SXM2-32GB": 32, "V100-PCIE-16GB": 16, "V100-PCIE-32GB": 32,
    "V100S-PCIE-32GB": 32,
    "P100-PCIE-16GB": 16, "P100-SXM2-16GB": 16, "P4": 8,
    "RTX A6000": 48, "RTX 6000 Ada Generation": 48, "RTX A5000": 24, "RTX A4000": 16,
    "GeForce RTX 4090": 24, "GeForce RTX 3090": 24,
}

VENDOR_PREFIX = re.compile(r"^(?:nvidia|tesla)\s+", re.I)  # what a model name may start with


def model_key(model: str) -> str:
    """A model name as the table is keyed: without a leading "NVIDIA " or "Tesla ", runs of
    spaces as one, lower case ('NVIDIA A100-SXM4-80GB' -> 'a100-sxm4-80gb')."""
    return re.sub(r"\s+", " ", VENDOR_PREFIX.sub("", model.strip())).lower()


MEMORY_BY_KEY = {model_key(name): gib for name, gib in GPU_MEMORY_GIB.items()}


def memory_gib(model: str | None) -> int | None:
    """The nominal memory of a GPU model in GiB, or None for a model not in GPU_MEMORY_GIB."""
    return None if not model else MEMORY_BY_KEY.get(model_key(model))


def view_rows() -> list[tuple[str, str, int]]:
    """The rows of the view gpu_memory: (gpu_model, model_key, memory_gib), in table order."""
    return [(name, model_key(name), gib) for name, gib in GPU_MEMORY_GIB.items()]
