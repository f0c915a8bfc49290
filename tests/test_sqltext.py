"""SQL literals (yolocost/sqltext.py) stand in for bound parameters, which make DuckDB 1.5 import
pandas and pyarrow: each value must come back from a real DuckDB exactly as bound, with the
type binding gives it (hostile strings included: quotes, a NUL, SQL in a label value)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import duckdb
import pytest

from yolocost.sqltext import literal, values

VALUES = [
    None, True, False, 0, -7, 2**62, 0.1, 1e-300, -2.5e20, 1 / 3,
    Decimal("12.345678"), Decimal("0.000001"), Decimal("-3"),
    "", "plain", "it's", "''; DROP TABLE gpu_usage; --", "a\0b\0", "ü 漢字 \\ \n \t %",
    dt.date(2026, 10, 5),
    dt.datetime(2026, 11, 23, 10, 0, 0, 123456),
    dt.datetime(2026, 11, 23, 10, 0, tzinfo=dt.timezone.utc),
    dt.datetime(2026, 3, 29, 1, 30, tzinfo=ZoneInfo("Europe/Berlin")),
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_literal_reads_back_as_the_bound_value(value):
    con = duckdb.connect()
    try:
        bound = con.execute("SELECT ?, typeof(?)", [value, value]).fetchone()
        written = con.execute(f"SELECT {literal(value)}, typeof({literal(value)})").fetchone()
    finally:
        con.close()
    assert written[0] == bound[0] and type(written[0]) is type(bound[0])
    if isinstance(value, (str, bool, dt.date)) or value is None:
        assert written[1] == bound[1]


def test_a_decimal_with_a_positive_exponent_keeps_its_value():
    con = duckdb.connect()
    try:  # (DuckDB 1.5.6 binds Decimal("1E+3") as 1.000)
        assert con.execute(f"SELECT {literal(Decimal('1E+3'))}").fetchone()[0] == 1000
    finally:
        con.close()


def test_values_insert_rows_into_typed_columns():
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE prices (gpu_model VARCHAR, effective_from DATE, price DECIMAL(18, 6))")
        rows = [("A100 'SXM'", dt.date(2026, 10, 1), Decimal("2.123456")), ("*", dt.date(1970, 1, 1), Decimal("1"))]
        con.execute(f"INSERT INTO prices VALUES {values(rows)}")
        assert con.execute("SELECT * FROM prices").fetchall() == rows
    finally:
        con.close()


def test_other_types_are_refused():
    with pytest.raises(TypeError):
        literal(object())
