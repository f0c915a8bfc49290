"""Named queries: every file in queries/ runs on the sample month and returns rows;
parameters, read-only mode and output formats behave as documented."""

import json

import pytest

from yolocost import queries, tables
from yolocost.errors import YolocostError
from yolocost.resources import shipped_dir

QUERY_FILES = sorted(p.stem for p in shipped_dir("queries").glob("*.sql"))
ALL_MONTHS = {"estimate_inputs"}  # the finished runs `yolocost estimate` rests on, over every month


def test_there_are_at_least_eight_documented_queries():
    listed = queries.available()
    assert len(listed) >= 8
    for q in listed:
        assert q.title and q.description, q.name
        assert q.name in ALL_MONTHS or any(p.name == "month" for p in q.params), q.name


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
    # a typo is not silently ignored (the default would apply)
    with pytest.raises(YolocostError, match=r"has no parameter limt \(it takes month, limit\)"):
        queries.run(sample_db.path, queries.resolve("top_idle_wasters"), {"month": "2026-10", "limt": "3"})
    for bad in ("nan", "inf", "-inf"):
        with pytest.raises(YolocostError, match=f"min_hours: '{bad}' is not a valid DOUBLE"):
            queries.run(sample_db.path, queries.resolve("unallocated_by_host_day"), {"month": "2026-10", "min_hours": bad})


def test_an_error_while_reading_rows_is_a_clean_error(sample_db):
    """DuckDB raises some errors only while the rows are fetched, after execute() returned."""
    sql = "SELECT CASE WHEN range > 100000 THEN error('too late') END FROM range(1000000)"
    with pytest.raises(YolocostError, match="query sql: Invalid Input Error: too late"):
        queries.run(sample_db.path, queries.resolve(sql), {})


def test_timestamps_come_back_in_the_configured_time_zone(sample_db):
    sql = "SELECT TIMESTAMPTZ '2026-10-09 17:30:00+00' AS t"
    _, [(utc,)] = queries.run(sample_db.path, queries.resolve(sql), {})
    _, [(berlin,)] = queries.run(sample_db.path, queries.resolve(sql), {}, timezone="Europe/Berlin")
    assert utc == berlin  # the same instant
    assert (utc.hour, berlin.hour) == (17, 19)
    assert tables.to_table(["t"], [(berlin,)]).splitlines()[2] == "2026-10-09 19:30"


def test_read_only_by_default(sample_db):
    with pytest.raises(YolocostError, match="read-only"):
        queries.run(sample_db.path, queries.resolve("DROP TABLE mart_job"), {})


def test_csv_neutralizes_formulas_and_json_keeps_exact_decimals():
    from decimal import Decimal

    text = tables.to_csv(["project", "cost"], [('=HYPERLINK("http://x")', Decimal("1.500000000")), ("-1+2", None)])
    assert text.splitlines()[1] == "\"'=HYPERLINK(\"\"http://x\"\")\",1.500000000"
    assert text.splitlines()[2].startswith("'-1+2")
    data = json.loads(tables.to_json(["cost"], [(Decimal("0.100000001"),)]))
    assert data == [{"cost": "0.100000001"}]
    assert tables.to_csv(["cost"], [(Decimal("-5.25"),)]).splitlines()[1] == "-5.25"  # a number, not a formula


def test_the_text_table_shows_an_exact_decimal_with_the_digits_csv_and_json_have():
    """A ledger in a currency of three decimals holds 0.002 (DECIMAL(38, 3)): the text table
    printed it as 0.00 where the CSV said 0.002."""
    from decimal import Decimal

    rows = [("p1", Decimal("0.002")), ("p2", Decimal("1234.500")), ("p3", Decimal("7")),
            ("p4", Decimal("0.100000001")), ("p5", Decimal("-5.25")), ("p6", Decimal("0E-9"))]
    text = [line.split() for line in tables.to_table(["project", "cost"], rows).splitlines()[2:-1]]
    assert text == [["p1", "0.002"], ["p2", "1,234.500"], ["p3", "7"], ["p4", "0.100000001"], ["p5", "-5.25"],
                    ["p6", "0.000000000"]]
    csv_cells = [line.split(",")[1] for line in tables.to_csv(["project", "cost"], rows).splitlines()[1:]]
    assert [c.replace(",", "") for _, c in text] == csv_cells == [r["cost"] for r in json.loads(
        tables.to_json(["project", "cost"], rows))]


def test_every_duckdb_type_is_written_as_json_and_csv(sample_db):
    sql = ("SELECT list(cost ORDER BY project) AS costs, {'a': 1.5::DECIMAL(3, 1)} AS s, INTERVAL 3 HOUR AS i, "
           "'ab'::BLOB AS b, TIME '10:00' AS t, '6ba7b810-9dad-11d1-80b4-00c04fd430c8'::UUID AS u "
           "FROM mart_project_month WHERE month = '2026-10'")
    columns, rows = queries.run(sample_db.path, queries.resolve(sql), {})
    [data] = json.loads(tables.to_json(columns, rows))
    costs = sample_db.one("SELECT list(cost::VARCHAR ORDER BY project) AS c FROM mart_project_month "
                          "WHERE month = '2026-10'")["c"]
    assert data == {"costs": costs, "s": {"a": "1.5"}, "i": 10800.0, "b": "6162", "t": "10:00:00",
                    "u": "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}
    line = tables.to_csv(columns, rows).splitlines()[1]
    assert line.startswith('"[' + ", ".join(f'""{c}""' for c in costs) + ']"')


def test_header_parsing():
    q = queries.parse_query(
        "-- title: T\n-- description: D\n-- param: month VARCHAR: the month\n-- param: limit INTEGER = 5: rows\nSELECT 1",
        "x",
    )
    assert (q.title, q.description) == ("T", "D")
    assert [(p.name, p.type, p.default, p.doc) for p in q.params] == [
        ("month", "VARCHAR", None, "the month"), ("limit", "INTEGER", "5", "rows")]
