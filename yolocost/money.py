"""Rounding money to cents so that rounded parts add up to the rounded total.

The marts keep money exact (DECIMAL(38, 9)); the cent ledger (yolocost.ledger) rounds each
month once and stores the cents every document prints. Rounding each figure on its own
breaks sums (three projects at 1/3 cent each round to 0.00 + 0.00 + 0.00 while their total
rounds to 0.01), so the ledger, and every figure that is no charge, rounds with the
functions here:

* `to_cents(amounts)`: the largest-remainder method. Each part is floored to the cent, and
  the cents still missing to reach the total, rounded half up, go one each to the parts with
  the largest remainders (ties: the earlier part first). The parts add up to
  `round_cents(sum(amounts))` exactly and each differs from its exact amount by less than one
  cent. Deterministic: same amounts in the same order, same cents.
* `allocate(amounts, keys)`: the same for a two-level hierarchy (rows grouped by a key, e.g.
  the finance CSV's day x GPU model rows grouped by project). Group totals are rounded first,
  with the largest remainder over the groups; then each group's cents are distributed over its
  rows with the largest remainder within the group. So the rows of a group add up to that
  group's printed total, and the groups (and all rows) add up to the rounded grand total.

Only Decimal and int amounts are accepted: a float is a rounding error already made.

"Cent" stands for the currency's minor unit: every function takes `places`, the number of
decimals of that unit (`minor_unit(currency)`: 2 for most, 0 for JPY or KRW, 3 for KWD).

How an amount is shown is defined here too, once: `Currency` (its code and minor unit) rounds
an amount half up to the minor unit for display only (`Currency.round`) and writes it with
thousands separators (`Currency.format`); the report templates, the estimate, the what-if and
the charts' hover texts all show money through it.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Hashable, Sequence

CENT = Decimal("0.01")

# ISO 4217 currencies whose minor unit is not a hundredth (the list's current codes)
_MINOR_UNITS = {
    **dict.fromkeys(("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI",
                     "VND", "VUV", "XAF", "XOF", "XPF"), 0),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(("CLF", "UYW"), 4),
}


# ISO 4217 alphabetic codes (the list's current and recently withdrawn ones; not XXX "no
# currency" nor XTS "testing"): a code outside it is a typo, and its minor unit unknown
ISO_4217 = frozenset("""
    AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP
    BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB
    EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HRK HTG HUF IDR ILS INR IQD IRR ISK JMD JOD
    JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU
    MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD
    RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY
    TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAF XAG XAU XBA XBB XBC XBD XCD
    XCG XDR XOF XPD XPF XPT XSU XUA YER ZAR ZMW ZWG ZWL
""".split())


def is_currency(code: str) -> bool:
    """Whether `code` is an ISO 4217 currency code (upper case, as the config has it)."""
    return code in ISO_4217


def minor_unit(currency: str) -> int:
    """Decimals of the currency's smallest unit: 2, or 0 (JPY), 3 (KWD), 4 (CLF)."""
    return _MINOR_UNITS.get(currency.upper(), 2)


@dataclass(frozen=True)
class Currency:
    """A currency as amounts are shown in it: `code` (ISO 4217, or "" for none: two decimals,
    no code) and its minor unit. Display only: a figure the ledger stored is already whole
    minor units, and `round` leaves it as it is; any other amount is rounded half up (away
    from zero) to the minor unit when shown, never before it is summed."""

    code: str

    @property
    def places(self) -> int:
        """Decimals of the minor unit: 2, or 0 (JPY), 3 (KWD)."""
        return minor_unit(self.code)

    @property
    def quantum(self) -> Decimal:
        """One minor unit: Decimal("0.01"), Decimal("1") for JPY, Decimal("0.001") for KWD."""
        return Decimal(1).scaleb(-self.places)

    @property
    def zero(self) -> Decimal:
        """Nothing, with the minor unit's decimals (0.00, 0, 0.000): the start of a sum of cents."""
        return Decimal(0).quantize(self.quantum)

    @property
    def spec(self) -> str:
        """The format spec of an amount, thousands grouped: ",.2f". Python's `format` and the
        d3-format of plotly's hover and tick formats read it alike."""
        return f",.{self.places}f"

    def round(self, amount: Decimal | int | float) -> Decimal:
        """The amount half up (away from zero) to the minor unit, for display: 1234.565 EUR
        -> 1234.57, 1234.5 JPY -> 1235 (`round_cents`). A float, from a report's rows, is
        read as it prints (0.1 as 0.1); the ledger's amounts are whole minor units already."""
        exact = amount if isinstance(amount, (Decimal, int)) and not isinstance(amount, bool) else Decimal(str(amount))
        return round_cents(exact, self.places)

    def format(self, amount: Decimal | int | float, with_code: bool = False, grouped: bool = True) -> str:
        """The amount as shown: "1,234.57", "1,234.57 EUR" (`with_code`), "1,235 JPY";
        `grouped=False` leaves out the thousands separators ("1234.57", for JSON)."""
        shown = format(self.round(amount), self.spec if grouped else self.spec[1:])
        return f"{shown} {self.code}" if with_code and self.code else shown


# Decimal arithmetic is exact only within the context precision (28 digits by default);
# money in the marts has up to 38, and sums of many rows more: compute with room to spare.
_CONTEXT = decimal.Context(prec=120, rounding=ROUND_HALF_UP, traps=[decimal.InvalidOperation, decimal.Inexact])


def _exact(amount) -> Decimal:
    if isinstance(amount, bool) or not isinstance(amount, (Decimal, int)):
        raise TypeError(f"money must be a Decimal or an int, not {type(amount).__name__}: {amount!r}")
    value = Decimal(amount)
    if not value.is_finite():
        raise ValueError(f"money must be finite, not {value}")
    return value


def _in_cents(amount, places: int = 2) -> Decimal:
    """The amount counted in cents, exactly (1.234 -> 123.4)."""
    return _CONTEXT.multiply(_exact(amount), Decimal(10) ** places)


def _cents_value(cents: int, places: int = 2) -> Decimal:
    """An integer number of cents as money with `places` decimals (123 -> 1.23, 0 -> 0.00)."""
    return _CONTEXT.multiply(Decimal(cents), Decimal(1).scaleb(-places))


def round_cents(amount: Decimal | int, places: int = 2) -> Decimal:
    """One amount rounded to the cent, half up (away from zero): 0.005 -> 0.01."""
    cents = int(_in_cents(amount, places).to_integral_value(rounding=ROUND_HALF_UP))
    return _cents_value(cents, places)


def _sum(values: Sequence[Decimal | int]) -> Decimal:
    total = Decimal(0)
    for value in values:
        total = _CONTEXT.add(total, value)
    return total


def _largest_remainder(amounts: Sequence[Decimal | int], target_cents: int, places: int = 2) -> list[int]:
    """Integer cents per amount adding up to target_cents, each the amount's floor or one more."""
    scaled = [_in_cents(a, places) for a in amounts]
    floors = [int(s.to_integral_value(rounding=ROUND_FLOOR)) for s in scaled]
    extra = target_cents - sum(floors)
    if not 0 <= extra <= len(amounts):
        raise ValueError(
            f"cannot round {len(amounts)} amounts to a total of {_cents_value(target_cents, places)}: "
            f"their floors add up to {_cents_value(sum(floors), places)}"
        )
    # largest remainder first; equal remainders: the earlier position first
    order = sorted(range(len(amounts)), key=lambda i: (-(scaled[i] - floors[i]), i))
    cents = list(floors)
    for i in order[:extra]:
        cents[i] += 1
    return cents


def to_cents(amounts: Sequence[Decimal | int], places: int = 2) -> list[Decimal]:
    """Round each amount to the cent so that the parts add up to round_cents(sum(amounts)).

    Largest-remainder method, ties broken by position (earlier first):
    to_cents([Decimal("0.003333333")] * 3) == [Decimal("0.01"), Decimal("0.00"), Decimal("0.00")]
    because the total 0.009999999 rounds to 0.01 and the first of three equal remainders
    gets the cent.
    """
    amounts = list(amounts)
    target = int(_in_cents(_sum([_exact(a) for a in amounts]), places).to_integral_value(rounding=ROUND_HALF_UP))
    return [_cents_value(c, places) for c in _largest_remainder(amounts, target, places)]


def distribute(amounts: Sequence[Decimal | int], total: Decimal | int, places: int = 2) -> list[Decimal]:
    """Round each amount to the cent so that the parts add up to `total` (already in cents).

    Largest-remainder method as in to_cents, but towards a given total, e.g. a group's share
    rounded at the level above. The total must be reachable by rounding every part down or up
    to a neighbouring cent (ValueError otherwise).
    """
    total = _exact(total)
    if total != total.quantize(Decimal(1).scaleb(-places)):
        raise ValueError(f"total {total} is not a whole number of cents")
    return [_cents_value(c, places) for c in _largest_remainder(list(amounts), int(_in_cents(total, places)), places)]


@dataclass(frozen=True)
class Allocation:
    """Cents for each input amount (`parts`, in input order), each group (`groups`, in order
    of first appearance) and the whole (`total`):
    sum(parts) == sum(groups.values()) == total == round_cents(sum of the exact amounts), and
    for every key, the parts with that key add up to groups[key]."""

    parts: list[Decimal]
    groups: dict[Hashable, Decimal]
    total: Decimal


def allocate(amounts: Sequence[Decimal | int], keys: Sequence[Hashable], places: int = 2) -> Allocation:
    """Round a two-level hierarchy to cents consistently: rows (`amounts`) grouped by `keys`.

    First the groups' exact totals are rounded with to_cents (largest remainder over the
    groups, in order of first appearance), then each group's cents are distributed over its
    rows with the largest remainder within the group (rows in input order). Both sums hold:
    rows -> group totals, and group totals -> the rounded grand total.

    allocate([Decimal("0.004"), Decimal("0.004"), Decimal("0.004")], ["a", "b", "c"]) gives
    groups {"a": 0.01, "b": 0.00, "c": 0.00} and total 0.01 (0.012 rounds to 0.01).
    """
    amounts = [_exact(a) for a in amounts]
    keys = list(keys)
    if len(keys) != len(amounts):
        raise ValueError(f"{len(amounts)} amounts but {len(keys)} keys")
    members: dict[Hashable, list[int]] = {}
    for i, key in enumerate(keys):
        members.setdefault(key, []).append(i)
    group_exact = [_sum([amounts[i] for i in idx]) for idx in members.values()]
    group_cents = to_cents(group_exact, places)
    parts: list[Decimal] = [_cents_value(0, places)] * len(amounts)
    for idx, cents in zip(members.values(), group_cents):
        for i, part in zip(idx, distribute([amounts[i] for i in idx], cents, places)):
            parts[i] = part
    groups = dict(zip(members, group_cents))
    return Allocation(parts, groups, _cents_value(int(_in_cents(_sum(group_cents), places)), places))


def allocate_tree(amounts: Sequence[Decimal | int], paths: Sequence[tuple], places: int = 2) -> list[Decimal]:
    """Round a hierarchy to cents once, top down: rows (`amounts`) placed by `paths`, tuples
    of keys from the outermost level to the innermost (e.g. (charge kind, project, GPU
    model, day)).

    The grand total is rounded half up; then, level by level, each group's cents are shared
    over its subgroups (in order of first appearance) with the largest remainder, down to the
    rows. So every group at every level, and every row, differs from its exact amount by less
    than one cent, and the rows of any group add up to that group's cents: a figure read at
    any level of the tree is the sum of the rows below it.
    """
    amounts = [_exact(a) for a in amounts]
    paths = list(paths)
    if len(paths) != len(amounts):
        raise ValueError(f"{len(amounts)} amounts but {len(paths)} paths")
    parts: list[Decimal] = [_cents_value(0, places)] * len(amounts)
    if not amounts:
        return parts

    def split(indices: list[int], depth: int, cents: Decimal) -> None:
        if len(indices) == 1 or depth >= len(paths[indices[0]]):
            for i, part in zip(indices, distribute([amounts[i] for i in indices], cents, places)):
                parts[i] = part
            return
        members: dict[Hashable, list[int]] = {}
        for i in indices:
            members.setdefault(paths[i][depth], []).append(i)
        sums = [_sum([amounts[i] for i in idx]) for idx in members.values()]
        for idx, share in zip(members.values(), distribute(sums, cents, places)):
            split(idx, depth + 1, share)

    split(list(range(len(amounts))), 0, round_cents(_sum(amounts), places))
    return parts


def apportion(total: Decimal | int, weights: Sequence[Decimal | int], places: int = 2) -> list[Decimal]:
    """Share `total` (a whole number of cents) over parts in proportion to `weights` (>= 0,
    not all 0): each part gets its exact quota total x weight / sum(weights) floored to the
    cent, and the cents left go one each to the largest remainders (ties: earlier first).
    The parts add up to `total` exactly (Hamilton's method, computed with exact fractions)."""
    from fractions import Fraction

    total = _exact(total)
    if total != total.quantize(Decimal(1).scaleb(-places)):
        raise ValueError(f"total {total} is not a whole number of cents")
    weights = [_exact(w) for w in weights]
    if any(w < 0 for w in weights) or not any(weights):
        raise ValueError("weights must be >= 0 and not all 0")
    units = int(_in_cents(total, places))
    whole = sum((Fraction(w) for w in weights), Fraction(0))
    quotas = [Fraction(units) * Fraction(w) / whole for w in weights]
    floors = [q.numerator // q.denominator for q in quotas]
    order = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - floors[i]), i))
    for i in order[:units - sum(floors)]:
        floors[i] += 1
    return [_cents_value(c, places) for c in floors]


def cap(parts: Sequence[Decimal], caps: Sequence[Decimal]) -> list[Decimal]:
    """Keep each rounded part at or under its cap (a part of a figure never exceeds the
    figure, e.g. idle cost and the cost it is part of, rounded separately): what a part has
    over its cap moves, cent by cent, to the parts with the most room left (ties: earlier
    first); it is dropped only when no part has room. Sums are kept whenever they can be."""
    out = list(parts)
    excess = Decimal(0)
    for i, (part, limit) in enumerate(zip(out, caps)):
        if part > limit:
            excess += part - limit
            out[i] = limit
    if excess:
        for i in sorted(range(len(out)), key=lambda i: (-(caps[i] - out[i]), i)):
            room = caps[i] - out[i]
            if room <= 0 or not excess:
                break
            moved = min(room, excess)
            out[i] += moved
            excess -= moved
    return out
