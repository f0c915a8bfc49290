"""Accounting labels of the scheduled jobs: user, project (or none), image tag and digest.

Every user and every tag violation kind appears at least once, and a few jobs carry no
project label (they still have a user).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import people, tags, yolo
from .jobs import JobSpec
from .rng import stable_hex, stream


@dataclass(frozen=True)
class Labels:
    project: str | None
    user: str
    image_tag: str | None
    image_digest: str
    tag_status: str


def _pick(rng: np.random.Generator, weights: dict) -> object:
    keys = list(weights)
    w = np.array([weights[k] for k in keys], dtype=float)
    return keys[int(rng.choice(len(keys), p=w / w.sum()))]


def _digest(seed: int, *parts: object) -> str:
    return "sha256:" + stable_hex(seed, "image", *parts)


def assign_labels(seed: int, specs: list[JobSpec], unlabeled_share: float = 0.04) -> list[Labels]:
    """Labels for the jobs in job-code order."""
    rng = stream(seed, "labels")
    n = len(specs)
    activity = {u: w for u, (_, w) in people.USERS.items()}
    users = [str(_pick(rng, activity)) for _ in range(n)]
    for user, i in zip(people.USERS, rng.permutation(n)):  # everyone trains something
        users[int(i)] = user
    projects: list[str | None] = []
    for user in users:
        own = people.USERS[user][0]
        projects.append(own[0] if len(own) == 1 or rng.random() < 0.65 else own[1])
    for i in rng.choice(n, size=min(n, max(6, round(unlabeled_share * n))), replace=False):
        projects[int(i)] = None

    statuses = [str(_pick(rng, tags.STATUS_MIX)) for _ in range(n)]
    for kind in tags.TAG_STATUSES[1:]:
        if kind not in statuses:
            ok = [i for i, s in enumerate(statuses) if s == "ok"]
            statuses[ok[int(rng.integers(len(ok)))]] = kind

    out = []
    for spec, user, project, status in zip(specs, users, projects, statuses):
        if status == "ok":
            purpose = _pick(rng, tags.PURPOSES)
            opt = tags.OPTIMIZATION[int(rng.integers(len(tags.OPTIMIZATION)))]
            cuda = spec.kind.cuda[int(rng.integers(len(spec.kind.cuda)))]
            tag = f"{purpose}-{yolo.family(spec.model_type)}-{opt}-{cuda}"
        elif status == "latest":
            tag = "latest"
        elif status == "empty":
            tag = ""
        elif status == "digest_only":
            tag = None
        else:
            tag = tags.NONCONFORMING[int(rng.integers(len(tags.NONCONFORMING)))]
        build = int(rng.integers(0, 4 if status in ("latest", "empty", "digest_only") else 2))
        digest = _digest(seed, status, tag, spec.kind.cuda[0], build)
        assert tags.tag_status(tag) == status
        out.append(Labels(project, user, tag, digest, status))
    return out
