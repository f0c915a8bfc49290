"""Operational incidents of the month: one host down for about a day, one energy counter reset."""

from __future__ import annotations

from dataclasses import dataclass

from .fleet import Gpu, Host
from .window import Window


@dataclass(frozen=True)
class Downtime:
    hostname: str
    start: int  # epoch seconds, on the grain; no samples in [start, end)
    end: int


@dataclass(frozen=True)
class CounterReset:
    gpu: Gpu
    sample: int  # index of the first sample after the driver reload (counter restarted at 0)
    at: int  # its epoch second


@dataclass(frozen=True)
class Incidents:
    downtime: tuple[Downtime, ...]
    resets: tuple[CounterReset, ...]

    def down_samples(self, window: Window, hostname: str) -> list[tuple[int, int]]:
        """[first, last) sample ranges in which the host sends nothing."""
        return [
            (window.sample_at(d.start), window.sample_at(d.end)) for d in self.downtime if d.hostname == hostname
        ]

    def reset_for(self, gpu: Gpu) -> CounterReset | None:
        return next((r for r in self.resets if r.gpu.uuid == gpu.uuid), None)


def _pick(hosts: list[Host], kind: str, number: int) -> Host:
    of_kind = [h for h in hosts if h.kind.key == kind]
    return next((h for h in of_kind if h.number == number), of_kind[-1])


def plan_incidents(hosts: list[Host], window: Window) -> Incidents:
    """An A10G host (number 3) is down from the 14th 09:00 to the 15th 11:00 local;
    GPU 3 of A100 host number 2 has its driver reloaded on the 19th at 03:12:30 local."""
    down_host = _pick(hosts, "a10g", 3)
    downtime = Downtime(down_host.name, window.local(13, 9), window.local(14, 11))
    reset_host = _pick(hosts, "a100", 2)
    gpu = reset_host.gpus[min(3, len(reset_host.gpus) - 1)]
    sample = window.sample_at(window.local(18, 3, 12, 30))
    return Incidents((downtime,), (CounterReset(gpu, sample, window.instant(sample)),))
