"""A small seeded detection dataset: coloured shapes on noisy backgrounds, in YOLO format.

Enough for a real training to learn something in a few epochs on a CPU, with no download:
`images/{train,val}/*.png`, `labels/{train,val}/*.txt` (one `class cx cy w h` line per
shape, normalized) and a `data.yaml` that Ultralytics reads. The same seed gives the same
files byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CLASSES = ("square", "circle", "triangle")


@dataclass(frozen=True)
class Dataset:
    folder: Path
    data_yaml: Path
    train_images: int
    val_images: int


def _draw(rng: np.random.Generator, size: int):
    """One image and its labels: a background with noise and 1-2 shapes that do not overlap much."""
    from PIL import Image, ImageDraw

    base = rng.integers(0, 256, 3)
    noise = rng.normal(0, 12, (size, size, 3))
    pixels = np.clip(base + noise, 0, 255).astype(np.uint8)
    image = Image.fromarray(pixels, "RGB")
    draw = ImageDraw.Draw(image)
    labels = []
    taken: list[tuple[float, float, float, float]] = []
    for _ in range(int(rng.integers(1, 3))):
        side = float(rng.uniform(0.3, 0.55)) * size
        x0, y0 = (float(v) for v in rng.uniform(0, size - side, 2))
        box = (x0, y0, x0 + side, y0 + side)
        if any(box[0] < t[2] and t[0] < box[2] and box[1] < t[3] and t[1] < box[3] for t in taken):
            continue
        taken.append(box)
        cls = int(rng.integers(len(CLASSES)))
        colour = tuple(int(c) for c in (255 - base + rng.integers(-40, 40, 3)) % 256)
        if CLASSES[cls] == "square":
            draw.rectangle(box, fill=colour)
        elif CLASSES[cls] == "circle":
            draw.ellipse(box, fill=colour)
        else:
            draw.polygon([(x0 + side / 2, y0), (x0, y0 + side), (x0 + side, y0 + side)], fill=colour)
        labels.append(f"{cls} {(x0 + side / 2) / size:.6f} {(y0 + side / 2) / size:.6f} "
                      f"{side / size:.6f} {side / size:.6f}")
    return image, labels


def generate(folder: Path, train_images: int = 16, val_images: int = 8, imgsz: int = 64, seed: int = 0) -> Dataset:
    """Write the dataset into `folder` (a finished one is reused as it is) and return where its yaml is."""
    folder = Path(folder).resolve()
    data_yaml = folder / "data.yaml"
    if not data_yaml.is_file():
        rng = np.random.default_rng(seed)
        for split, count in (("train", train_images), ("val", val_images)):
            (folder / "images" / split).mkdir(parents=True, exist_ok=True)
            (folder / "labels" / split).mkdir(parents=True, exist_ok=True)
            for n in range(count):
                image, labels = _draw(rng, imgsz)
                image.save(folder / "images" / split / f"{n:05d}.png")
                (folder / "labels" / split / f"{n:05d}.txt").write_text("\n".join(labels) + "\n", encoding="utf-8")
        names = "".join(f"  {i}: {name}\n" for i, name in enumerate(CLASSES))
        # written last: its presence marks a complete dataset
        data_yaml.write_text(f"path: {json.dumps(str(folder))}\ntrain: images/train\nval: images/val\nnames:\n{names}", encoding="utf-8")
    return Dataset(folder, data_yaml, train_images, val_images)
