"""Helpers for the benchmark-runner tests: offline runs, tiny trainings, a scheduler's GPU."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.builders import cli_argv

HERE = Path(__file__).resolve().parent
NETGUARD = HERE / "netguard.py"
# a scheduler's allocation, as Kubernetes' device plugin or Slurm hands it to a job
GPU_UUID = "GPU-5f3c2a10-8d4e-4b6a-9c1f-0a1b2c3d4e5f"
# a tiny training that reaches a non-zero mAP in 3 epochs on a CPU: one class, an optimizer
# step per batch, no warmup or mosaic
TINY = ["--model", "yolov8n.yaml", "--epochs", "3", "--imgsz", "64", "--batch", "4", "--images", "128",
        "--device", "cpu", "--seed", "0",
        *[x for kv in ("nbs=4", "warmup_epochs=0", "mosaic=0", "single_cls=true", "optimizer=AdamW", "lr0=0.002",
                       "workers=0") for x in ("--train-arg", kv)]]


def require_bench() -> None:
    """Skip or fail without torch and ultralytics; found, not imported (ultralytics writes its
    settings into the home folder when imported without the runner's offline switches)."""
    import importlib.util

    missing = [m for m in ("torch", "torchvision", "ultralytics") if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("YOLOCOST_SKIP_BENCH") == "1":
            pytest.skip(f"bench extra not installed ({', '.join(missing)} missing) and YOLOCOST_SKIP_BENCH=1")
        pytest.fail(f"the bench extra is not installed ({', '.join(missing)} missing): run `make install-test`, "
                    "or set YOLOCOST_SKIP_BENCH=1 to skip these tests", pytrace=False)


def can_unshare_net() -> bool:
    """Root with unshare(1): the training can run in a network namespace with no network at all."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


def bench_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a run: an empty temporary HOME (XDG paths unset, so anything that
    writes to the home folder would land there) and no GPU unless the test hands one out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_") and k != "CUDA_VISIBLE_DEVICES"}
    env.update(HOME=str(home), PYTHONWARNINGS="ignore", **extra)
    return env


def yolocost_cmd(*args: str, netlog: Path | None = None, no_network: bool = False) -> list[str]:
    """`python -m yolocost ARGS`; with netlog, through netguard.py (records every network call);
    with no_network, in a fresh network namespace with only loopback up. (A command line, not the
    cli runner: the runner tests start it under netguard or `unshare -n`.)"""
    cmd = [sys.executable, str(NETGUARD), str(netlog), *args] if netlog else cli_argv(*args)
    if no_network:
        cmd = ["unshare", "-n", "sh", "-c", 'ip link set lo up 2>/dev/null; exec "$@"', "sh", *cmd]
    return cmd


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
