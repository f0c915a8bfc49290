"""Heap tuning for the fetch process: its threads share glibc's main heap.

Decoded answers freed across several per-thread heaps leave them fragmented, and the
fetch's peak then grows with the window (BENCHMARKS.md).
"""

from __future__ import annotations

import ctypes
import os


def one_heap() -> None:
    """Keep the threads that fetch and decode answers on glibc's main heap (M_ARENA_MAX = 1)
    rather than one heap each: decoded answers freed across several heaps leave them
    fragmented, and the fetch's peak grows with the window (BENCHMARKS.md). The threads hold
    the GIL while they decode (the numpy part of their conversions is short), so one heap
    costs them little. Nothing to do off glibc."""
    libc = glibc()
    if libc is not None:
        libc.mallopt(-8, 1)  # M_ARENA_MAX


def glibc():
    """glibc as a ctypes library, None on other C libraries (musl, macOS, Windows)."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        return ctypes.CDLL("libc.so.6")
    except (AttributeError, OSError, ValueError):  # no such name or library
        return None
