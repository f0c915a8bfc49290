"""Cents rounding (yolocost.money): rounded parts add up to the rounded total, exactly.

Hand-made amounts with the arithmetic written out, then seeded random lists for the
properties (sums, at most a cent per part, determinism).
"""

from __future__ import annotations

import decimal
import random
from decimal import Decimal

import pytest

from yolocost.money import Allocation, allocate, distribute, round_cents, to_cents

D = Decimal
THIRD = D("0.003333333")  # a third of a cent, as the marts' 9 decimals hold it


def cents(*values: str) -> list[Decimal]:
    return [D(v) for v in values]


# =========================================================================== round_cents


@pytest.mark.parametrize("amount, expected", [
    ("0.005", "0.01"),  # half up
    ("0.004999999", "0.00"),
    ("1.995", "2.00"),
    ("-0.005", "-0.01"),  # half away from zero
    ("12.3", "12.30"),
    ("0", "0.00"),
])
def test_round_cents_is_half_up(amount, expected):
    assert round_cents(D(amount)) == D(expected)
    assert str(round_cents(D(amount))) == expected


# =========================================================================== to_cents


def test_three_thirds_of_a_cent_give_the_cent_to_one_of_them():
    """0.003333333 x 3 = 0.009999999, which rounds to 0.01. Rounding each on its own gives
    0.00 + 0.00 + 0.00 = 0.00, a cent short; the largest remainder gives the cent to one part,
    and with three equal remainders (0.3333333 cent each) the first one gets it."""
    parts = to_cents([THIRD, THIRD, THIRD])
    assert parts == cents("0.01", "0.00", "0.00")
    assert sum(parts) == D("0.01") == round_cents(THIRD * 3)
    assert sum(round_cents(a) for a in [THIRD] * 3) == D("0.00")  # what naive rounding prints


def test_largest_remainders_get_the_missing_cents():
    """0.004 + 0.006 + 0.005 = 0.015 -> 0.02 (half up). Floors are 0, 0, 0: two cents are
    missing, they go to the remainders 0.6 and 0.5 cent; 0.4 gets none."""
    assert to_cents(cents("0.004", "0.006", "0.005")) == cents("0.00", "0.01", "0.01")


def test_ties_go_to_the_earlier_position():
    """1.005 + 2.005 = 3.01 exactly: floors 1.00 + 2.00 = 3.00, one cent missing, equal
    remainders (0.5 cent): the first part gets it, in whatever order the parts come."""
    assert to_cents(cents("1.005", "2.005")) == cents("1.01", "2.00")
    assert to_cents(cents("2.005", "1.005")) == cents("2.01", "1.00")


def test_total_is_the_exact_sum_rounded_half_up():
    """0.0025 + 0.0025 = 0.005 -> 0.01: one part gets a cent although each alone is 0.0025."""
    assert to_cents(cents("0.0025", "0.0025")) == cents("0.01", "0.00")
    assert to_cents(cents("0.0024", "0.0025")) == cents("0.00", "0.00")  # 0.0049 -> 0.00


def test_whole_cents_stay_as_they_are():
    assert to_cents(cents("1.23", "4.56", "0")) == cents("1.23", "4.56", "0.00")
    assert to_cents([]) == []
    assert to_cents([3]) == [D("3.00")]


def test_negative_amounts_round_consistently():
    """-0.004 - 0.004 + 0.001 = -0.007 -> -0.01. Floors: -0.01, -0.01, 0.00 = -0.02; one cent
    to add back, remainders 0.6, 0.6, 0.1 cent: the first part gets it."""
    assert to_cents(cents("-0.004", "-0.004", "0.001")) == cents("0.00", "-0.01", "0.00")


def test_amounts_beyond_float_and_default_decimal_precision_stay_exact():
    """DECIMAL(38, 9) holds 29 integer digits: more than the 28 digits Python's decimal
    context keeps by default, so the sums must not be rounded along the way."""
    big = D("12345678901234567890123456789.123456789")
    parts = to_cents([big, D("0.001543211")])
    # 0.123456789 + 0.001543211 = 0.125 -> total ...789.13 (half up); floors ...789.12 and 0.00;
    # the missing cent goes to the larger remainder: 0.3456789 cent (big) over 0.1543211 (small)
    assert parts == [D("12345678901234567890123456789.13"), D("0.00")]
    with decimal.localcontext() as ctx:
        ctx.prec = 60  # the default 28 digits would round this very sum
        assert sum(parts, D(0)) == D("12345678901234567890123456789.13")


def test_floats_are_refused():
    with pytest.raises(TypeError):
        to_cents([0.1, D("0.2")])
    with pytest.raises(TypeError):
        round_cents(0.5)


def test_properties_on_random_amounts():
    rng = random.Random(20261001)
    for _ in range(300):
        amounts = [D(rng.randrange(-2_000_000_000, 9_000_000_000)).scaleb(-9) for _ in range(rng.randrange(1, 30))]
        parts = to_cents(amounts)
        assert sum(parts) == round_cents(sum(amounts))
        assert all(abs(p - a) < D("0.01") for p, a in zip(parts, amounts))
        assert all(p == p.quantize(D("0.01")) for p in parts)
        assert to_cents(amounts) == parts  # deterministic


# =========================================================================== distribute


def test_distribute_reaches_a_given_total():
    """Three thirds of a cent spread over a total of 0.01 (or of 0.00, or 0.02 after a cent
    from the level above): floors are 0, the cents go to the first equal remainders."""
    assert distribute([THIRD] * 3, D("0.01")) == cents("0.01", "0.00", "0.00")
    assert distribute([THIRD] * 3, D("0.00")) == cents("0.00", "0.00", "0.00")
    assert distribute([THIRD] * 3, D("0.02")) == cents("0.01", "0.01", "0.00")


def test_distribute_refuses_totals_rounding_cannot_reach():
    with pytest.raises(ValueError):
        distribute([THIRD] * 3, D("0.04"))  # more than one cent per part
    with pytest.raises(ValueError):
        distribute([D("1.00")], D("0.99"))
    with pytest.raises(ValueError):
        distribute([THIRD], D("0.005"))  # not a whole number of cents


# =========================================================================== allocate


def test_allocate_rounds_groups_first_then_rows_within_each_group():
    """Rows of three groups (prices 0.005 and 0.007 per row, as in the finance tests):

        p1: 0.005 + 0.007 + 0.005 = 0.017     p2: 0.015     (unallocated): 0.007
        grand total 0.039 -> 0.04

    Groups: floors 0.01 + 0.01 + 0.00 = 0.02, two cents missing, remainders p1 0.7, p2 0.5,
    unallocated 0.7 cent -> p1 and unallocated get one: 0.02, 0.01, 0.01 (sum 0.04).
    (Each group rounded on its own: 0.02 + 0.02 + 0.01 = 0.05, a cent more than the total.)
    Rows of p1 towards 0.02: floors 0, remainders 0.5, 0.7, 0.5 -> the 0.007 row and the first
    0.005 row get a cent: 0.01, 0.01, 0.00."""
    amounts = cents("0.005", "0.007", "0.005", "0.015", "0.007")
    keys = ["p1", "p1", "p1", "p2", "(unallocated)"]
    result = allocate(amounts, keys)
    assert isinstance(result, Allocation)
    assert result.groups == {"p1": D("0.02"), "p2": D("0.01"), "(unallocated)": D("0.01")}
    assert list(result.groups) == ["p1", "p2", "(unallocated)"]  # order of first appearance
    assert result.parts == cents("0.01", "0.01", "0.00", "0.01", "0.01")
    assert result.total == D("0.04") == sum(result.parts) == round_cents(sum(amounts))
    assert sum(round_cents(g) for g in (D("0.017"), D("0.015"), D("0.007"))) == D("0.05")


def test_allocate_three_projects_at_a_third_of_a_cent():
    """Each project 0.003333333, 0.003333334, 0.003333333 (the cumulative rounding of the
    marts): total 0.01; the cent goes to the largest remainder, the second project."""
    result = allocate(cents("0.003333333", "0.003333334", "0.003333333"), ["a", "b", "c"])
    assert result.groups == {"a": D("0.00"), "b": D("0.01"), "c": D("0.00")}
    assert result.total == D("0.01")


def test_allocate_groups_need_not_be_contiguous():
    result = allocate(cents("0.006", "0.006", "0.006"), ["x", "y", "x"])
    # x: 0.012 -> floor 0.01 (remainder 0.2), y: 0.006 (0.6); total 0.018 -> 0.02: y gets the cent
    assert result.groups == {"x": D("0.01"), "y": D("0.01")}
    # x's rows towards 0.01: remainders 0.6, 0.6 -> the first x row
    assert result.parts == cents("0.01", "0.01", "0.00")


def test_allocate_properties_on_random_hierarchies():
    rng = random.Random(42)
    for _ in range(200):
        n = rng.randrange(1, 60)
        amounts = [D(rng.randrange(0, 5_000_000_000)).scaleb(-9) for _ in range(n)]
        keys = [f"p{rng.randrange(0, 7)}" for _ in range(n)]
        result = allocate(amounts, keys)
        assert result.total == round_cents(sum(amounts)) == sum(result.parts) == sum(result.groups.values())
        for key, group_cents in result.groups.items():
            rows = [i for i, k in enumerate(keys) if k == key]
            assert sum(result.parts[i] for i in rows) == group_cents
            assert abs(group_cents - sum(amounts[i] for i in rows)) < D("0.01")
        assert all(abs(p - a) < D("0.01") for p, a in zip(result.parts, amounts))
        assert allocate(amounts, keys) == result


def test_allocate_checks_its_arguments():
    with pytest.raises(ValueError):
        allocate(cents("1", "2"), ["a"])
    assert allocate([], []) == Allocation([], {}, D("0.00"))


def test_the_minor_unit_follows_the_currency():
    from yolocost.money import minor_unit
    from yolocost.templating import environment

    assert [minor_unit(c) for c in ("EUR", "USD", "JPY", "krw", "KWD", "CLF")] == [2, 2, 0, 0, 3, 4]
    assert to_cents([Decimal("0.4")] * 3, places=0) == [Decimal("1"), Decimal("0"), Decimal("0")]
    shown = {c: environment(currency=c).from_string("{{ v | money }}").render(v=Decimal("1083333.335"))
             for c in ("EUR", "JPY", "KWD")}
    assert shown == {"EUR": "1,083,333.34", "JPY": "1,083,333", "KWD": "1,083,333.335"}


def test_the_money_filter_adds_the_reports_own_code_and_no_other():
    import pytest

    from yolocost.templating import environment

    page = environment(currency="JPY").from_string("{{ v | money(code) }}")
    assert page.render(v=Decimal("1234.5"), code="JPY") == "1,235 JPY"
    with pytest.raises(ValueError, match="amounts are in JPY"):  # a yen figure labelled in euros
        page.render(v=Decimal("1234.5"), code="EUR")


def test_a_currency_shows_amounts_in_its_minor_unit():
    from yolocost.money import Currency

    eur, jpy, kwd, none = Currency("EUR"), Currency("JPY"), Currency("KWD"), Currency("")
    assert (eur.places, jpy.places, kwd.places, none.places) == (2, 0, 3, 2)
    assert (eur.quantum, jpy.quantum, kwd.quantum) == (D("0.01"), D("1"), D("0.001"))
    assert [str(c.zero) for c in (eur, jpy, kwd)] == ["0.00", "0", "0.000"]
    assert (eur.spec, jpy.spec, kwd.spec) == (",.2f", ",.0f", ",.3f")
    # 1234.5675: to the cent 1234.57 (the 0.0075 rounds up), to the yen 1235, to the fils 1234.568 (half up)
    assert eur.format(D("1234.5675"), with_code=True) == "1,234.57 EUR"
    assert jpy.format(D("1234.5675"), with_code=True) == "1,235 JPY"
    assert kwd.format(D("1234.5675"), with_code=True) == "1,234.568 KWD"
    assert none.format(D("1234.5675"), with_code=True) == "1,234.57"  # no currency, no code
    assert eur.format(D("1234567.891"), grouped=False) == "1234567.89"


def test_display_rounding_is_half_up_away_from_zero():
    from yolocost.money import Currency

    eur, jpy, kwd = Currency("EUR"), Currency("JPY"), Currency("KWD")
    # exactly half a minor unit goes up (half-even would give 0.12, 2 and 0.002)
    assert (eur.round(D("0.125")), jpy.round(D("2.5")), kwd.round(D("0.0025"))) == (D("0.13"), D("3"), D("0.003"))
    assert (eur.round(D("0.1249")), jpy.round(D("2.49")), kwd.round(D("0.00249"))) == (D("0.12"), D("2"), D("0.002"))
    assert (eur.round(D("-0.125")), jpy.round(D("-2.5"))) == (D("-0.13"), D("-3"))
    # a float is read as it prints: 0.125 -> 0.13, 1.005 (binary 1.00499...) -> 1.01
    assert (eur.format(0.125), eur.format(1.005), eur.format(7)) == ("0.13", "1.01", "7.00")
    # the ledger's cents stay as they are
    assert eur.round(D("12.34")) == D("12.34") and str(jpy.round(D("1083333"))) == "1083333"
