"""Independent, reproducible random streams keyed by names and numbers.

Every part of the month draws from its own stream, so the result does not depend on the
order in which hosts, GPUs or jobs are processed.
"""

from __future__ import annotations

import hashlib

import numpy as np


def _key(part: int | str) -> int:
    if isinstance(part, (int, np.integer)):
        return int(part) & 0xFFFFFFFF
    digest = hashlib.sha256(str(part).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "little")


def stream(seed: int, *parts: int | str) -> np.random.Generator:
    """A generator determined only by the seed and the given key parts."""
    entropy = [int(seed) & 0xFFFFFFFF, (int(seed) >> 32) & 0xFFFFFFFF] + [_key(p) for p in parts]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))


def stable_hex(seed: int, *parts: object, length: int = 64) -> str:
    """A hex string determined by the seed and the parts (ids, digests)."""
    text = "|".join([str(seed)] + [str(p) for p in parts])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]
