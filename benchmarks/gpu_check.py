"""A labeled bench run on a real NVIDIA GPU, scraped as Prometheus would scrape it.

The GPU path of the benchmark runner in one go, on a machine with a driver: NVML's view of
GPU 0 beside nvidia-smi's (`nvml.json`), then `yolocost bench run --device 0 --gpu-sampler`
while this script scrapes its endpoint every `--every` seconds, each scrape stamped with the
wall-clock time it was taken (`scrapes.jsonl`), and the run's record and results.csv. Every
file goes to `--out` as soon as it exists, so a run cut short still leaves what it saw.

`tests/ingest/test_recorded_h100_run.py` turns a recording into OpenMetrics, puts it into a
real Prometheus and a real VictoriaMetrics and ingests it, so the bill of a real GPU run is
checked against what the GPU did.

    python benchmarks/gpu_check.py --out OUT [--epochs 200 --minutes 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def nvml_beside_smi(out: Path) -> None:
    """yolocost's NVML readings of GPU 0 next to nvidia-smi's, and the energy counter's step."""
    from yolocost.bench.nvml import Nvml

    fields = "index,uuid,name,utilization.gpu,memory.used,power.draw,driver_version"
    smi = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=False).stdout.strip()
    session = Nvml.open()
    try:
        gpu = session.by_index(0)
        first = session.read([gpu])[0]
        time.sleep(2.0)
        second = session.read([gpu])[0]
        memory = _memory_calls(session.nv, session.nv.nvmlDeviceGetHandleByIndex(0))
    finally:
        session.close()
    found = {
        "nvidia_smi": dict(zip(fields.split(","), (v.strip() for v in smi.split(",")))),
        "gpu": gpu.__dict__,
        "readings": [r.__dict__ | {"gpu": None} for r in (first, second)],
        "memory_mib": memory,
        "energy_mj_in_2s": (second.energy_mj - first.energy_mj)
        if first.energy_mj is not None and second.energy_mj is not None else None,
    }
    (out / "nvml.json").write_text(json.dumps(found, indent=1, default=str))
    print(json.dumps(found, default=str), file=sys.stderr, flush=True)


def _memory_calls(nv, handle) -> dict:
    """Memory in use by NVML's first call and by its v2 call (with the driver's reserve apart):
    what `--gpu-sampler` served before and after it read the v2 call."""
    mib = 2**20
    found = {"v1_used": nv.nvmlDeviceGetMemoryInfo(handle).used / mib}
    try:
        v2 = nv.nvmlDeviceGetMemoryInfo(handle, version=nv.nvmlMemory_v2)
        found |= {"v2_used": v2.used / mib, "v2_reserved": v2.reserved / mib}
    except (AttributeError, nv.NVMLError) as exc:
        found["v2_error"] = str(exc)
    return found


def smi_memory_used(device: str) -> float | None:
    """nvidia-smi's memory in use on the GPU, read beside each scrape: what the served
    DCGM_FI_DEV_FB_USED should equal (the driver's reserve left out)."""
    found = subprocess.run(["nvidia-smi", "-i", device, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, check=False).stdout.strip()
    try:
        return float(found)
    except ValueError:
        return None


def scrape(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.read().decode()
    except OSError:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=Path, default=Path("/tmp/gpu-check-runs"))
    parser.add_argument("--job-id", default="h100-yolov8n")
    parser.add_argument("--model", default="yolov8n.yaml")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--minutes", type=float, default=3.0,
                        help="Ultralytics' `time` train argument: stop after this long")
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--imgsz", type=int, default=640)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between scrapes")
    parser.add_argument("--device", default="0")
    parser.add_argument("--port", type=int, default=9450)
    parser.add_argument("--deadline", type=float, default=420.0, help="seconds before the run is stopped")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    try:
        nvml_beside_smi(args.out)
    except Exception as exc:  # noqa: BLE001 - the training is still worth running and scraping
        (args.out / "nvml.json").write_text(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        print(f"NVML check failed: {exc}", file=sys.stderr, flush=True)

    command = [sys.executable, "-m", "yolocost", "bench", "run", "--job-id", args.job_id, "--model", args.model,
               "--project", "vision", "--user", "alice", "--image-tag", "train-yolov8-nano-cu130",
               "--epochs", str(args.epochs), "--imgsz", str(args.imgsz), "--batch", str(args.batch),
               "--images", str(args.images), "--device", args.device, "--gpu-sampler", "--out", str(args.runs),
               "--metrics-addr", "127.0.0.1", "--metrics-port", str(args.port), "--linger", "12",
               "--train-arg", f"time={args.minutes / 60:.4f}"]
    print(" ".join(command), file=sys.stderr, flush=True)
    url = f"http://127.0.0.1:{args.port}/metrics"
    started = time.time()
    with (args.out / "bench-run.log").open("w") as log, (args.out / "scrapes.jsonl").open("w") as scrapes:
        run = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        next_at = time.time()
        while run.poll() is None:
            if time.time() - started > args.deadline:
                run.terminate()
                try:
                    run.wait(30)
                except subprocess.TimeoutExpired:
                    run.kill()
                    run.wait()
                print(f"stopped the run after {args.deadline:.0f} s (--deadline)", file=sys.stderr, flush=True)
                break
            text = scrape(url)
            if text is not None:
                scrapes.write(json.dumps({"t": round(time.time(), 3), "text": text,
                                          "smi_memory_used_mib": smi_memory_used(args.device)}) + "\n")
                scrapes.flush()
            next_at += args.every
            time.sleep(max(0.0, next_at - time.time()))
    print(f"bench run exit {run.returncode} after {time.time() - started:.1f} s", file=sys.stderr, flush=True)
    folder = args.runs / args.job_id
    for name in ("yolocost-run.json", "results.csv", "args.yaml"):
        found = sorted(folder.rglob(name))
        if found:
            shutil.copy(found[0], args.out / name)
    return 0 if run.returncode == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
