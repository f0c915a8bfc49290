"""Container image tags and the tag policy they are checked against.

Conforming tags read {purpose}-{yolo_version}-{optimization_level}-{cuda_version}; the
violations are `latest`, the empty tag, a digest-only image (no tag) and anything else
that does not match the pattern.
"""

from __future__ import annotations

import re

TAG_PATTERN = r"^[a-z0-9]+-yolo[a-z0-9]+-[a-z0-9]+-cu[0-9]+$"
TAG_STATUSES = ("ok", "latest", "empty", "digest_only", "nonconforming")

# share of jobs per tag status
STATUS_MIX = {"ok": 0.80, "latest": 0.06, "empty": 0.04, "digest_only": 0.04, "nonconforming": 0.06}
PURPOSES = {"train": 0.6, "finetune": 0.2, "sweep": 0.1, "bench": 0.1}
OPTIMIZATION = ("fast", "medium", "full")
NONCONFORMING = ("v2", "yolov8-prod", "Train-YOLO11-fast-cu121", "exp-2026-10", "ultralytics-8.3.40")


def tag_status(tag: str | None, pattern: str = TAG_PATTERN) -> str:
    """Classify an image tag: ok, latest, empty, digest_only or nonconforming."""
    if tag is None:
        return "digest_only"
    if tag == "":
        return "empty"
    if tag == "latest":
        return "latest"
    return "ok" if re.fullmatch(pattern, tag) else "nonconforming"
