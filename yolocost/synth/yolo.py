"""What the simulated workload trains: YOLO model types and their size-dependent behaviour."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SizeProfile:
    epoch_minutes: float  # one epoch of a reference dataset on one A100
    mib_per_image: float  # activation memory per image in a batch at imgsz 640
    batches: tuple[int, ...]
    map50: float  # typical final mAP50 / mAP50-95 on the teams' datasets
    map50_95: float
    loss_start: tuple[float, float, float]  # box, cls, dfl at epoch 0
    loss_floor: tuple[float, float, float]


SIZES = {
    "n": SizeProfile(9.0, 110.0, (16, 32, 64, 128), 0.45, 0.30, (1.55, 2.70, 1.45), (0.98, 0.80, 1.07)),
    "s": SizeProfile(13.0, 190.0, (16, 32, 64), 0.53, 0.37, (1.50, 2.55, 1.42), (0.88, 0.66, 1.02)),
    "m": SizeProfile(22.0, 360.0, (16, 32, 64), 0.62, 0.45, (1.45, 2.40, 1.40), (0.78, 0.54, 0.97)),
    "l": SizeProfile(34.0, 560.0, (8, 16, 32, 64), 0.70, 0.52, (1.42, 2.30, 1.38), (0.70, 0.45, 0.93)),
}

# model type -> share of jobs
MODEL_TYPES = {
    "yolov8n": 0.10, "yolov8s": 0.13, "yolov8m": 0.13, "yolov8l": 0.07,
    "yolo11n": 0.10, "yolo11s": 0.13, "yolo11m": 0.12, "yolo11l": 0.06,
    "yolov10s": 0.08, "yolov10m": 0.08,
}
FAMILY_MAP_BONUS = {"yolov8": 0.0, "yolo11": 0.012, "yolov10": 0.006}
FAMILY_TIME = {"yolov8": 1.0, "yolo11": 0.95, "yolov10": 1.05}
CONTEXT_MIB = 700.0  # CUDA context and weights before the first batch
IMGSZ = 640


def family(model_type: str) -> str:
    """yolov8m -> yolov8; the `{yolo_version}` part of an image tag."""
    return model_type[:-1]


def size(model_type: str) -> SizeProfile:
    return SIZES[model_type[-1]]
