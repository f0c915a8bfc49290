"""What `yolocost ingest` replaces: the GPU-intervals the server returns, never those of GPUs
or hosts it leaves out (a selector, a server that holds fewer GPUs) unless --allow-loss.

The fixture hour (helpers/hourcluster.py): GPU-aaa and GPU-bbb on host h1, each present 3,600 s of the
window (12 intervals of 300 s), at 2.00 per GPU-hour: 4.00 in all, 2.00 per GPU.
"""

from __future__ import annotations

import datetime as dt
import subprocess
from decimal import Decimal

from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner

WITHOUT_BBB = "selector = 'UUID!=\"GPU-bbb\"'"
COST = "SELECT sum(total_cost) FROM mart_cluster_month"


def _run(yc, config, db, *extra: str) -> subprocess.CompletedProcess:
    return yc.ingest(config, db, extra=extra)


def test_a_selector_that_leaves_out_a_gpu_is_refused(yc, prior_db, prom):
    """The same window with `UUID!="GPU-bbb"` used to replace the stored window with GPU-aaa
    alone (exit 0): GPU-bbb's 12 stored rows would be lost, so it stops, naming them."""
    config = yc.config(prom.url, prometheus=WITHOUT_BBB)
    assert h.query(prior_db, COST) == [(Decimal("4.00"),)]
    with h.unchanged(prior_db):
        result = yc.ingest(config, prior_db)
    end = (h.DATA_START + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%MZ")
    h.assert_one_line_error(
        result, f"Prometheus at {prom.url} returned no samples for 12 stored usage row(s) (1.00 GPU-hours) "
        f"of 1 GPU (GPU-bbb) on 1 host (h1) from {h.DATA_START:%Y-%m-%dT%H:%MZ} to {end}",
        "[prometheus] selector", "--allow-loss")


def test_allow_loss_replaces_the_window_with_what_the_server_returns(yc, prior_db, prom):
    """With --allow-loss the window holds GPU-aaa's rows alone, exactly as before, and the
    month costs 1 GPU-hour x 2.00 = 2.00."""
    config = yc.config(prom.url, prometheus=WITHOUT_BBB)
    aaa = "SELECT * EXCLUDE (usage_row) FROM stg_gpu_usage WHERE gpu_uuid = 'GPU-aaa' ORDER BY ALL"
    before = h.query(prior_db, aaa)
    result = _run(yc, config, prior_db, "--allow-loss")
    h.assert_ok(result)
    assert "warning: --allow-loss: deleting 12 stored usage row(s) (1.00 GPU-hours) of 1 GPU (GPU-bbb)" in result.stderr
    assert h.query(prior_db, "SELECT DISTINCT gpu_uuid FROM gpu_usage") == [("GPU-aaa",)]
    assert h.query(prior_db, aaa) == before
    assert h.query(prior_db, COST) == [(Decimal("2.00"),)]


def test_a_rerun_of_the_same_window_needs_no_flag(yc, prior_db, prom):
    """Idempotence: the same server and window again replaces the window, every figure equal."""
    before = h.state(prior_db)
    h.assert_ok(yc.ingest(yc.config(prom.url), prior_db))
    after = h.state(prior_db)
    assert {k: v for k, v in after.items() if k != "loads"} == {k: v for k, v in before.items() if k != "loads"}


def test_a_renamed_cluster_is_refused(yc, prior_db, prom):
    """The database holds cluster t's window; ingesting it as cluster u would bill every
    GPU-interval twice (the marts do not tell clusters apart): refused, nothing changed."""
    config = yc.config(prom.url)
    config.write_text(config.read_text().replace('name = "t"', 'name = "u"'))
    with h.unchanged(prior_db):
        h.assert_one_line_error(yc.ingest(config, prior_db), "holds 24 usage row(s) of cluster 't'",
                                "[cluster] name is 'u'; a database holds one cluster")
