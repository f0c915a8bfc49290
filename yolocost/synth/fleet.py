"""The simulated hardware: GPU models, hosts and GPUs with stable UUIDs."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from .rng import stable_hex


@dataclass(frozen=True)
class GpuKind:
    key: str  # short name used in hostnames
    name: str  # dcgm modelName
    memory_mib: int
    idle_w: float
    tdp_w: float
    speed: float  # training throughput relative to an A100
    hosts: int  # hosts at scale 1
    gpus_per_host: int
    requests: tuple[tuple[int, float], ...]  # (GPUs per job, share of jobs)
    cuda: tuple[str, ...]  # CUDA tags its images are built for
    target_load: float  # share of its GPU time the workload asks for


KINDS = (
    GpuKind("a100", "NVIDIA A100-SXM4-80GB", 81920, 62.0, 400.0, 1.0, 3, 8,
            ((1, 0.40), (2, 0.25), (4, 0.20), (8, 0.15)), ("cu121", "cu124"), 0.74),
    GpuKind("a10g", "NVIDIA A10G", 24576, 24.0, 300.0, 0.42, 4, 4,
            ((1, 0.55), (2, 0.25), (4, 0.20)), ("cu121", "cu124"), 0.62),
    GpuKind("v100", "Tesla V100-SXM2-32GB", 32768, 42.0, 300.0, 0.58, 2, 4,
            ((1, 0.70), (2, 0.30)), ("cu118",), 0.18),
)
KIND_BY_KEY = {k.key: k for k in KINDS}


@dataclass(frozen=True)
class Gpu:
    code: int  # position in the fleet (hosts sorted by name, then index)
    uuid: str
    hostname: str
    index: int
    kind: GpuKind


@dataclass(frozen=True)
class Host:
    name: str
    kind: GpuKind
    number: int  # 1-based within its kind
    gpus: tuple[Gpu, ...]


def gpu_uuid(seed: int, hostname: str, index: int) -> str:
    """A dcgm-style UUID ("GPU-" + RFC 4122 form) derived from the seed and position."""
    raw = bytes.fromhex(stable_hex(seed, "gpu", hostname, index, length=32))
    return "GPU-" + str(uuid.UUID(bytes=raw, version=4))


def build_fleet(seed: int, scale: float) -> list[Host]:
    """Hosts of every kind, `scale` times the demo count (at least one of each), sorted by name."""
    specs: list[tuple[str, GpuKind, int]] = []
    for kind in KINDS:
        n = max(1, round(kind.hosts * scale))
        width = max(2, len(str(n)))
        specs.extend((f"gpu-{kind.key}-{i:0{width}d}", kind, i) for i in range(1, n + 1))
    specs.sort(key=lambda s: s[0])
    hosts, code = [], 0
    for name, kind, number in specs:
        gpus = []
        for index in range(kind.gpus_per_host):
            gpus.append(Gpu(code, gpu_uuid(seed, name, index), name, index, kind))
            code += 1
        hosts.append(Host(name, kind, number, tuple(gpus)))
    return hosts
