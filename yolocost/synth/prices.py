"""Demo price tables and exact price lookup.

A price's effective_from date means local midnight in the cluster time zone; the price that
applies to a grain interval is the latest one in effect at the interval's start.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .window import Window

DEMO_PRICES = [
    {"gpu_model": "NVIDIA A100-SXM4-80GB", "effective_from": "2026-01-01", "price_per_gpu_hour": "2.93"},
    {"gpu_model": "NVIDIA A100-SXM4-80GB", "effective_from": "2026-10-15", "price_per_gpu_hour": "2.61"},
    {"gpu_model": "NVIDIA A10G", "effective_from": "2026-01-01", "price_per_gpu_hour": "0.98"},
    {"gpu_model": "Tesla V100-SXM2-32GB", "effective_from": "2026-01-01", "price_per_gpu_hour": "1.46"},
]
DEMO_ENERGY_PRICES = [{"effective_from": "2026-01-01", "price_per_kwh": "0.21"}]


@dataclass(frozen=True)
class Segment:
    """A stretch of the window with one local month and constant prices."""

    start: int
    end: int
    month: str
    gpu_price: dict[str, Fraction]  # per GPU-hour, by GPU model name
    energy_price: Fraction  # per kWh


def _price_at(entries: list[tuple[int, Fraction]], instant: int, what: str) -> Fraction:
    found = [p for since, p in entries if since <= instant]
    if not found:
        raise ValueError(f"no price for {what} in effect at epoch {instant}")
    return found[-1]


def segments(window: Window, prices: list[dict], energy_prices: list[dict], models: list[str]) -> list[Segment]:
    """Cut the window at month starts and price changes; each piece has fixed prices."""
    gpu = {
        m: sorted(
            (window.local_date_midnight(p["effective_from"]), Fraction(p["price_per_gpu_hour"]))
            for p in prices
            if p["gpu_model"] == m
        )
        for m in models
    }
    energy = sorted(
        (window.local_date_midnight(p["effective_from"]), Fraction(p["price_per_kwh"])) for p in energy_prices
    )
    cuts = {window.start, window.end}
    cuts.update(lo for _, lo, _ in window.months)
    cuts.update(since for entries in gpu.values() for since, _ in entries if window.start < since < window.end)
    cuts.update(since for since, _ in energy if window.start < since < window.end)
    bounds = sorted(cuts)
    out = []
    for lo, hi in zip(bounds, bounds[1:]):
        month = next(label for label, m0, m1 in window.months if m0 <= lo < m1)
        out.append(
            Segment(
                lo,
                hi,
                month,
                {m: _price_at(e, lo, m) for m, e in gpu.items()},
                _price_at(energy, lo, "energy"),
            )
        )
    return out
