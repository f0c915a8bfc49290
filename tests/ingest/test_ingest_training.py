"""Training progress and final results of a bench-runner job whose endpoint two scrape targets
read (two scrape jobs, or an HA pair): each epoch, metric and result lands once, with its value
and its epoch's end time."""

from __future__ import annotations

import datetime as dt

UTC = dt.timezone.utc


def test_training_progress_scraped_twice_lands_once(prometheus, yc, tmp_path, h):
    server = prometheus("scraped_twice")
    db = tmp_path / "yc.duckdb"
    h.assert_ok(yc.ingest(yc.config(server.url), db))

    want = sorted(("j2", epoch, name, value, dt.datetime.fromtimestamp(h.sample_time(at), UTC))
                  for epoch, (at, values) in h.EPOCHS.items() for name, value in values.items())
    got = h.query(db, "SELECT job_id, epoch, metric, value, ts FROM training_progress ORDER BY ALL")
    assert len(got) == len(want) == 4
    for g, w in zip(got, want):
        assert g[:4] == w[:4]
        assert abs((g[4] - w[4]).total_seconds()) < 1e-3  # microseconds, from a float gauge
    r = h.RESULTS
    assert h.query(db, "SELECT job_id, map50, map50_95, best_epoch FROM job_results") == \
        [("j2", r["map50"], r["map50_95"], r["best_epoch"])]
    # and the marts see them: the job's final mAP and its epochs
    assert h.query(db, "SELECT job_id, map50 FROM mart_job WHERE job_id = 'j2'") == [("j2", r["map50"])]
