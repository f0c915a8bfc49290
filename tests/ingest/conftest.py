"""The ingest tests' fixtures: the tiny hand-made cluster hour (tests/helpers/hourcluster.py)
backfilled once per session, Prometheus servers on it, a good database to copy."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Iterator

import pytest
from helpers import hourcluster as h
from helpers import promserver


@pytest.fixture(scope="session")
def backfilled(tmp_path_factory) -> Iterator:
    """backfilled(variant) -> the TSDB directory holding that OpenMetrics file (made once)."""
    promserver.skip_or_fail_without_prometheus()
    root = tmp_path_factory.mktemp("tsdb")
    made: dict[str, Path] = {}

    def get(variant: str = "full") -> Path:
        if variant not in made:
            om = root / f"{variant}.om"
            om.write_text(h.openmetrics(**h.VARIANTS[variant]), encoding="utf-8")
            promserver.backfill(om, root / variant)
            made[variant] = root / variant
        return made[variant]

    yield get


@pytest.fixture(scope="session")
def prom(backfilled):
    """The shared server on the full fixture, without special flags."""
    with h.serve(backfilled("full")) as server:
        yield server


@pytest.fixture
def prometheus(backfilled) -> Iterator:
    """prometheus(variant="full", flags=(...), auth=False) -> a server for this test only."""
    with contextlib.ExitStack() as stack:

        def start(variant: str = "full", flags: tuple[str, ...] = (), auth: bool = False):
            return stack.enter_context(h.serve(backfilled(variant), tuple(flags), auth))

        yield start


@pytest.fixture
def yc(tmp_path) -> h.Yolocost:
    return h.Yolocost(tmp_path)


@pytest.fixture(scope="session")
def good_db(prom, tmp_path_factory) -> Path:
    """A database holding one good ingest of the window (price 2.00), made once; copy, don't write."""
    folder = tmp_path_factory.mktemp("good")
    runner = h.Yolocost(folder)
    db = folder / "good.duckdb"
    result = runner.ingest(runner.config(prom.url), db)
    h.assert_ok(result)
    assert not db.with_name(db.name + ".wal").exists(), "the ingest left a WAL behind"
    return db


@pytest.fixture
def prior_db(good_db, tmp_path) -> Path:
    """A private copy of the good database: the state a failing ingest must leave alone."""
    db = tmp_path / "yc.duckdb"
    shutil.copyfile(good_db, db)
    return db
