"""Named queries: every file in queries/ runs on the sample month and returns rows;
parameters, read-only mode and output formats behave as documented."""

import json

import pytest

from yolocost import queries
from yolocost.errors import YolocostError
from yolocost.resources import shipped_dir

QUERY_FILES = sorted(p.stem for p in shipped_dir("queries").glob("*.sql"))


def test_there_are_at_least_eight_documented_queries():
    listed = queries.available()
    assert len(listed) >= 8
    for q in listed:
        assert q.title and q.description, q.name
        assert any(p.name == "month" for p in q.params), q.name


@pytest.mark.parametrize("name", QUERY_FILES)
def test_query_returns_rows_for_the_sample_month(sample_db, name):
    columns, rows = queries.run(sample_db.path, queries.resolve(name), {"month": "2026-10"})
    assert columns
    assert rows, f"{name} returned no rows for 2026-10"


def test_most_expensive_jobs_agree_with_mart_job_month(sample_db):
    _, rows = queries.run(sample_db.path, queries.resolve("most_expensive_jobs"), {"month": "2026-10", "limit": "3"})
    assert len(rows) == 3
    top = sample_db.one(
        "SELECT job_id, round(cost, 2) FROM mart_job_month WHERE month = '2026-10' ORDER BY cost DESC, job_id LIMIT 1"
    )
    assert (rows[0][0], rows[0][9]) == tuple(top.values())


def test_missing_and_bad_parameters_are_clean_errors(sample_db):
    with pytest.raises(YolocostError, match="needs --param month"):
        queries.run(sample_db.path, queries.resolve("top_idle_wasters"), {})
    with pytest.raises(YolocostError, match="limit: 'ten' is not a valid INTEGER"):
        queries.run(sample_db.path, queries.resolve("top_idle_wasters"), {"month": "2026-10", "limit": "ten"})


def test_read_only_by_default(sample_db):
    with pytest.raises(YolocostError, match="read-only"):
        queries.run(sample_db.path, queries.resolve("DROP TABLE mart_job"), {})


def test_csv_neutralizes_formulas_and_json_keeps_exact_decimals():
    from decimal import Decimal

    text = queries.to_csv(["project", "cost"], [('=HYPERLINK("http://x")', Decimal("1.500000000")), ("-1+2", None)])
    assert text.splitlines()[1] == "\"'=HYPERLINK(\"\"http://x\"\")\",1.500000000"
    assert text.splitlines()[2].startswith("'-1+2")
    data = json.loads(queries.to_json(["cost"], [(Decimal("0.100000001"),)]))
    assert data == [{"cost": "0.100000001"}]


def test_header_parsing():
    q = queries.parse_query(
        "-- title: T\n-- description: D\n-- param: month VARCHAR: the month\n-- param: limit INTEGER = 5: rows\nSELECT 1",
        "x",
    )
    assert (q.title, q.description) == ("T", "D")
    assert [(p.name, p.type, p.default, p.doc) for p in q.params] == [
        ("month", "VARCHAR", None, "the month"), ("limit", "INTEGER", "5", "rows")]
