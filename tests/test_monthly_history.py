"""`monthly` for month N on a database that holds months N-2 and N-1 already: the real run
(ingest from a real Prometheus, month build, reports, finance CSV) keeps every stored figure
of the earlier months, and what it reads of the raw usage rows is profiled.

N is the Prometheus sample's month (October 2026, Europe/Berlin: 2026-09-30 22:00 to
2026-10-31 23:00 UTC). August and September are 16 GPUs at the sample's 300 s grain, of the
sample's cluster and of two GPU models its config prices, loaded month by month with the real
loader under the same config as the run: 16 x 31 x 288 = 142,848 and 16 x 30 x 288 = 138,240
usage rows, each more than a DuckDB row group (122,880 rows), so that what a scan reads can be
told apart by month. One job crosses from August into September.

The config keeps usage rows for 3,650 days, so the run prunes nothing: a prune of N-2 reads
and deletes N-2's rows by design (test_months covers it), and here every read of N-2 would be
the run's own. With the cutoff years before the oldest row, the prune's query is answered from
the table's statistics and scans no row.
"""

from __future__ import annotations

import csv
import shutil
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from helpers.builders import CROSSING, Profiled, archive, sample_config, write_month

from yolocost import db, load
from yolocost.config import Config, load_config
from yolocost.monthly import MonthlyResult, run_monthly

N2, N1, N = "2026-08", "2026-09", "2026-10"
SAMPLE_MODELS = ("NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-32GB")  # priced in the sample's config
ROW_GROUP = 122_880  # rows of a DuckDB row group
ROWS = {N2: 16 * 31 * 288, N1: 16 * 30 * 288}  # no DST change in August or September in Berlin
FORMATS = ("html", "summary", "csv", "index")


def month_config(prom_sample, folder: Path) -> Config:
    """The sample's config pointing at the test server, keeping usage rows for ten years, its
    database and reports in `folder`."""
    toml = sample_config(prom_sample, folder)
    text = toml.read_text(encoding="utf-8")
    assert text.count("[ingest]\n") == 1
    toml.write_text(text.replace("[ingest]\n", "[ingest]\nretention_days = 3650\n"), encoding="utf-8")
    return load_config(toml)


@pytest.fixture(scope="module")
def history(prom_sample, tmp_path_factory) -> Path:
    """A database holding N-2 and N-1, loaded a month at a time (copied by each run)."""
    root = tmp_path_factory.mktemp("history")
    config = month_config(prom_sample, root)
    for month in (N2, N1):
        load.load_parquet_dir(config, write_month(root / "raw" / month, config, month, SAMPLE_MODELS))
    return config.database


def stored(config: Config, sql: str) -> list[tuple]:
    con = duckdb.connect(str(config.database), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def figures(config: Config) -> dict[str, dict]:
    """Each month's by-month model and ledger rows."""
    return {m: archive(config, m) for m in (N2, N1, N)}


def builds(config: Config) -> list[tuple]:
    """month_builds as stored: a month the run rebuilt gets a new built_at."""
    return stored(config, "SELECT * FROM month_builds ORDER BY month")


@dataclass
class Run:
    config: Config
    result: MonthlyResult
    scans: list[int]  # rows each scan of gpu_usage read, in the order the run's queries ran
    replacing: int  # scans[replacing:] ran once the ingest's checks were done (the write, build, reports, prune)
    before: dict[str, dict]
    builds_before: list[tuple]


@pytest.fixture(scope="module")
def run(history, prom_sample, tmp_path_factory) -> Run:
    """`monthly` for N run in this process on a copy of `history`, with DuckDB's profiler on
    every connection it opens (db.connect wrapped in builders.Profiled, which only observes:
    each query runs unchanged on the real connection, and nothing is faked)."""
    root = tmp_path_factory.mktemp("run")
    shutil.copyfile(history, root / "yolocost.duckdb")
    config = month_config(prom_sample, root)
    before, builds_before = figures(config), builds(config)
    scans: list[int] = []
    replacing: list[int] = []
    real = db.connect

    def progress(message: str) -> None:
        if message.startswith("replacing "):  # the ingest's checks are done, its write begins
            replacing.append(len(scans))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(db, "connect", lambda *a, **kw: Profiled(real(*a, **kw), scans))
        result = run_monthly(config, N, FORMATS, progress)
    assert len(replacing) == 1
    return Run(config, result, scans, replacing[0], before, builds_before)


def test_monthly_keeps_the_earlier_months_and_reads_only_its_own(run, prom_sample):
    """N-2 and N-1 keep every figure and are not rebuilt (a window ending at N's end touches N
    alone); once the ingest has checked its rows, every scan of gpu_usage (the write, the
    month build, the reports, the prune) reads at most N's rows and one row group more (which
    may hold September's rows beside N's): never all of N-2's."""
    config, sample = run.config, prom_sample[0]
    rows = dict(ROWS) | {N: run.result.ingest.usage_rows}
    assert dict(stored(config, "SELECT strftime(timezone('Europe/Berlin', interval_start), '%Y-%m'), count(*) "
                               "FROM gpu_usage GROUP BY 1")) == rows
    # N's rows are the sample's, and the lead the server holds from before its window
    assert stored(config, f"SELECT count(*) FROM gpu_usage WHERE interval_start >= to_timestamp({sample.start})"
                  ) == [(sample.usage_rows,)] and rows[N] > sample.usage_rows
    assert rows[N] + ROW_GROUP < rows[N2]  # the bound below excludes a read of N-2 whole

    late = run.scans[run.replacing:]
    assert late and max(late) >= rows[N], run.scans  # the month build read N's rows
    assert all(n < rows[N] + ROW_GROUP for n in late), run.scans

    after = figures(config)
    assert after[N2] == run.before[N2] and after[N1] == run.before[N1]
    assert builds(config)[:2] == run.builds_before  # neither month rebuilt
    # by hand: 12 A100s and 4 V100s, 744 h each, at 2.93 and 1.46 an hour; GPU g draws (100 + g) W,
    # 1,720 W in all for 744 h: 1,279.68 kWh at 0.21
    assert stored(config, f"SELECT capacity_cost, energy_cost FROM mart_cluster_month WHERE month = '{N2}'") == [
        (12 * 744 * Decimal("2.93") + 4 * 744 * Decimal("1.46"), Decimal("1279.68") * Decimal("0.21"))]

    # N's figures: the month total, the finance CSV's BilledCost adding up to it in cents
    total = stored(config, f"SELECT total_cost FROM mart_cluster_month WHERE month = '{N}'")[0][0]
    finance = run.result.finance
    with finance.path.open(encoding="utf-8", newline="") as f:
        billed = sum(Decimal(r["BilledCost"]) for r in csv.DictReader(f))
    assert billed == finance.total == total.quantize(Decimal("0.01")) and billed > 0
    assert (finance.path.parent / "admin.html").is_file() and (finance.path.parent / "summary.html").is_file()
    # the job across N-2 and N-1 still has both months
    assert stored(config, f"SELECT month FROM mart_job_month WHERE job_id = '{CROSSING}' ORDER BY 1") == [(N2,), (N1,)]


def test_monthly_reads_no_row_of_month_n_minus_2(run, prom_sample):
    """The issue's bound on the whole run, the ingest's checks included: every scan of
    gpu_usage reads N's rows at most, plus part of one row group."""
    rows_n = prom_sample[0].usage_rows
    assert all(n < rows_n + ROW_GROUP for n in run.scans), run.scans


def test_the_cli_stores_the_same_figures(history, prom_sample, run, tmp_path, cli):
    """The real `yolocost monthly` on another copy of the same database: exit 0, and every
    month's stored figures and the finance CSV are those of the profiled run."""
    shutil.copyfile(history, tmp_path / "yolocost.duckdb")
    config = month_config(prom_sample, tmp_path)
    done = cli("--config", str(config.source), "monthly", "--month", N, "--format", "csv", timeout=600)
    assert done.returncode == 0, done.stderr
    assert figures(config) == figures(run.config)
    csv_name = run.result.finance.path.name
    assert (tmp_path / "reports" / N / csv_name).read_bytes() == run.result.finance.path.read_bytes()
