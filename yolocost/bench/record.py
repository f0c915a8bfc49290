"""The JSON run record beside each run's Ultralytics folder: labels, times, attempts, results.

Written atomically (a temporary file renamed over the old one) at the start of every attempt
and after every epoch, so a run killed at any point leaves a record that says how far it
got. `yolocost import-results` reads it (without torch) to load the run into the database.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataError

RECORD_NAME = "yolocost-run.json"
VERSION = 1
UTC = dt.timezone.utc


def now() -> dt.datetime:
    return dt.datetime.now(UTC)


def iso(value: dt.datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value is not None else None


def parse_time(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value).astimezone(UTC) if value else None


@dataclass
class Attempt:
    """One process that worked on the run; a killed one keeps ended_at None."""

    number: int
    started_at: str
    start_epoch: int | None = None  # first epoch it trained (1-based); > 1 when it resumed
    last_epoch: int | None = None  # last epoch it finished
    ended_at: str | None = None
    status: str = "running"  # running | finished | failed | interrupted


@dataclass
class RunRecord:
    job_id: str
    labels: dict[str, str]  # project, user, model_type, image_tag, image_digest
    model: str
    data: str  # the data yaml, or "synthetic:<seed>"
    epochs: int
    imgsz: int
    batch: int
    device: str | None
    hostname: str
    gpus: list[dict[str, Any]] = field(default_factory=list)  # uuid, index, model, instance
    start_time: str | None = None
    end_time: str | None = None
    status: str = "running"
    attempts: list[Attempt] = field(default_factory=list)
    epoch_end_times: dict[str, str] = field(default_factory=dict)  # "1" -> ISO time
    best_epoch: int | None = None
    results: dict[str, float | int | None] | None = None  # map50, map50_95 (best weights), best_epoch
    version: int = VERSION

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    def epoch_ended(self, epoch: int) -> dt.datetime | None:
        return parse_time(self.epoch_end_times.get(str(epoch)))

    def save(self, folder: Path) -> Path:
        path = Path(folder) / RECORD_NAME
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, folder: Path) -> "RunRecord | None":
        """The record in `folder`, None when there is none; a damaged one is a DataError."""
        path = Path(folder) / RECORD_NAME
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("version") != VERSION:
                raise ValueError(f"version {data.get('version')!r}, expected {VERSION}")
            data["attempts"] = [Attempt(**a) for a in data.get("attempts", [])]
            record = cls(**data)
            for value in (record.start_time, record.end_time, *record.epoch_end_times.values()):
                parse_time(value)
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise DataError(f"{path}: not a valid run record ({exc})") from None
        return record
