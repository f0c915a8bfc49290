"""The JSON run record beside each run's Ultralytics folder: labels, times, attempts, results.

Written atomically (a temporary file renamed over the old one) at the start of every attempt
and after every epoch, so a run killed at any point leaves a record that says how far it
got. The benchmark runner (yolocost.bench) writes it; `yolocost import-results` reads it
(without torch) to load the run into the database. The format lives here, below both, so
that neither imports the other for it.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, overload

from .atomic import replacing
from .errors import DataError

RECORD_NAME = "yolocost-run.json"
VERSION = 1
UTC = dt.timezone.utc


def now() -> dt.datetime:
    return dt.datetime.now(UTC)


@overload
def iso(value: dt.datetime) -> str: ...
@overload
def iso(value: None) -> None: ...
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
        with replacing(path) as tmp:
            tmp.write_text(json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: Path) -> "RunRecord | None":
        """The record in `folder`, None when there is none; a damaged one is a DataError."""
        path = Path(folder) / RECORD_NAME
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError(f"a JSON {type(data).__name__}, not an object")
            if data.get("version") != VERSION:
                raise ValueError(f"version {data.get('version')!r}, expected {VERSION}")
            _check_types(data)
            data["attempts"] = [Attempt(**a) for a in data.get("attempts", [])]
            record = cls(**data)
            for value in (record.start_time, record.end_time, *record.epoch_end_times.values()):
                parse_time(value)
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise DataError(f"{path}: not a valid run record ({exc})") from None
        return record


# field -> JSON types allowed (None: null), as the readers of a record use them
_SCALARS = {"job_id": (str,), "model": (str,), "data": (str,), "hostname": (str,), "epochs": (int,),
            "imgsz": (int,), "batch": (int,), "device": (str, None), "start_time": (str, None),
            "end_time": (str, None), "status": (str,), "best_epoch": (int, None)}
# object field -> types of its values; "results" may also be null
_OBJECTS = {"labels": (str, None), "epoch_end_times": (str,), "results": (int, float, None)}
# array field -> types of the values of each of its objects
_ARRAYS = {"gpus": (str, int, None), "attempts": (str, int, None)}
_NAMES = {str: "a string", int: "an integer", float: "a number", None: "null"}


def _check_types(data: dict) -> None:
    """The record's fields have the JSON types its readers rely on (a ValueError names the first
    that does not), so a hand-edited record fails on load in one line, not later in a traceback."""
    def check(name: str, value, kinds: tuple) -> None:
        if not any(value is None if k is None else isinstance(value, k) and not isinstance(value, bool)
                   for k in kinds):
            raise ValueError(f"{name} is {_show(value)}, expected {' or '.join(_NAMES[k] for k in kinds)}")

    for name, kinds in _SCALARS.items():
        if name in data:
            check(name, data[name], kinds)
    for name, kinds in _OBJECTS.items():
        value = data.get(name, {})
        if value is None and name == "results":
            continue
        if not isinstance(value, dict):
            raise ValueError(f"{name} is {_show(value)}, expected a JSON object")
        for key, item in value.items():
            check(f"{name}.{key}", item, kinds)
    for name, kinds in _ARRAYS.items():
        value = data.get(name, [])
        if not isinstance(value, list):
            raise ValueError(f"{name} is {_show(value)}, expected a JSON array")
        for n, item in enumerate(value):
            if not isinstance(item, dict):
                raise ValueError(f"{name}[{n}] is {_show(item)}, expected a JSON object")
            for key, x in item.items():
                check(f"{name}[{n}].{key}", x, kinds)


def _show(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."
