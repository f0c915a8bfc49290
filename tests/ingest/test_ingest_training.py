"""Training progress and final results of a bench-runner job whose endpoint two scrape targets
read (two scrape jobs, or an HA pair): each epoch, metric and result lands once, with its value
and its epoch's end time."""

from __future__ import annotations

import datetime as dt

from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner

UTC = dt.timezone.utc


def test_training_progress_scraped_twice_lands_once(prometheus, yc, tmp_path):
    server = prometheus("scraped_twice")
    db = tmp_path / "yc.duckdb"
    h.assert_ok(yc.ingest(yc.config(server.url), db))

    want = sorted(("j2", epoch, name, value, dt.datetime.fromtimestamp(h.sample_time(at), UTC))
                  for epoch, (at, values) in h.EPOCHS.items() for name, value in values.items())
    got = h.query(db, "SELECT job_id, epoch, metric, value, ts FROM training_progress ORDER BY ALL")
    assert got == want  # ts: the epoch-end gauge to the microsecond, rounded as datetime does
    r = h.RESULTS
    assert h.query(db, "SELECT job_id, map50, map50_95, best_epoch FROM job_results") == \
        [("j2", r["map50"], r["map50_95"], r["best_epoch"])]
    # and the marts see them: the job's final mAP and its epochs
    assert h.query(db, "SELECT job_id, map50 FROM mart_job WHERE job_id = 'j2'") == [("j2", r["map50"])]


def test_a_nan_result_and_an_oversized_count_are_stored_as_missing(prometheus, yc, tmp_path):
    """Prometheus' data cannot be corrected afterwards: refusing them would block the window
    for good. A NaN mAP is stored as missing (and said on stderr); a job-info count larger
    than an INTEGER holds is ignored like any other non-count."""
    server = prometheus("odd_values")
    db = tmp_path / "yc.duckdb"
    result = yc.ingest(yc.config(server.url), db)
    h.assert_ok(result)
    assert "job j2: map50 is nan in Prometheus; stored as missing" in result.stderr
    r = h.RESULTS
    assert h.query(db, "SELECT job_id, map50, map50_95, best_epoch FROM job_results") == \
        [("j2", None, r["map50_95"], r["best_epoch"])]
    assert h.query(db, "SELECT epochs, imgsz FROM jobs WHERE job_id = 'j2'") == [(None, 640)]
    assert h.query(db, "SELECT map50, cost_per_map50_point FROM mart_job WHERE job_id = 'j2'") == [(None, None)]


def test_a_rerun_keeps_other_jobs_progress_of_the_window(prometheus, yc, tmp_path):
    """Progress of a job the server does not serve (imported from its run folder, or gone from
    Prometheus) is not the ingest's to delete: a rerun of the window replaces j2's epochs and
    keeps the other job's, whose epoch ended inside the window."""
    import duckdb

    server = prometheus("scraped_twice")
    db = tmp_path / "yc.duckdb"
    config = yc.config(server.url)
    h.assert_ok(yc.ingest(config, db))
    inside = h.DATA_START + dt.timedelta(minutes=10)
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO training_progress VALUES ('imported', ?, 1, 'train/box_loss', 1.75)", [inside])
    con.close()
    h.assert_ok(yc.ingest(config, db))
    assert h.query(db, "SELECT job_id, ts, epoch, value FROM training_progress WHERE job_id = 'imported'") == \
        [("imported", inside, 1, 1.75)]
    assert h.query(db, "SELECT count(*) FROM training_progress WHERE job_id = 'j2'") == \
        [(sum(len(values) for _, values in h.EPOCHS.values()),)]
