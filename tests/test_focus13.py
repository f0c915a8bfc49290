"""The finance CSV in FOCUS 1.3: one test per normative statement of the 1.3 specification that
applies to yolocost's file (docs/focus-1.3.md maps each statement to its test and lists the
ones that do not apply, and why).

The validator's 1.3 rule model cannot be had offline, so the statements are the spec's own
MUST/SHOULD text: the columns, the Cost and Usage dataset and the glossary as tagged v1.3 of
FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec, the attributes as that repository words them in
the 1.3 cycle (docs/focus-1.3.md says which text was used where).

Both files are the bundled demo month, exported with focus_version="1.3": as configured
(`[allocation] unallocated = "none"`) and built again with "proportional". Rows are allocated
charges; an origin charge (one local day x GPU model x charge kind x price period of the
cluster's capacity) is not in the file, it is the sum of its allocated charges, and the marts
(mart_charge_daily) give its exact quantity and cost independently of the CSV writer.

Empty CSV fields are NULL (the csv module cannot tell an empty string from a missing value;
FOCUS defines no CSV encoding). A test marked `design_conflict` checks a statement the agreed
design does not meet: it is a strict xfail (an AssertionError is expected), so fixing the
design turns it into a failure that asks for the mark to go.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import json
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest

from helpers.builders import BuiltDb
from yolocost import finance
from yolocost.money import minor_unit
from yolocost.resources import shipped_dir

D = Decimal
SAMPLE = shipped_dir("sample_data")
MONTH = json.loads((SAMPLE / "ground_truth.json").read_text(encoding="utf-8"))["month"]
DOCS = Path(__file__).resolve().parents[1] / "docs"
POLICIES = ("none", "proportional")


def design_conflict(reason: str):
    """The statement holds against the agreed 1.3 design: expected to fail until the design changes."""
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"design conflict: {reason}")


# --------------------------------------------------------------------------- the spec's vocabulary

# Cost and Usage dataset, v1.3 column table
FOCUS13_COLUMNS = frozenset("""
AllocatedMethodDetails AllocatedMethodId AllocatedResourceId AllocatedResourceName AllocatedTags AvailabilityZone
BilledCost BillingAccountId BillingAccountName BillingAccountType BillingCurrency BillingPeriodEnd BillingPeriodStart
CapacityReservationId CapacityReservationStatus ChargeCategory ChargeClass ChargeDescription ChargeFrequency
ChargePeriodEnd ChargePeriodStart CommitmentDiscountCategory CommitmentDiscountId CommitmentDiscountName
CommitmentDiscountQuantity CommitmentDiscountStatus CommitmentDiscountType CommitmentDiscountUnit ConsumedQuantity
ConsumedUnit ContractApplied ContractedCost ContractedUnitPrice EffectiveCost HostProviderName InvoiceId
InvoiceIssuerName ListCost ListUnitPrice PricingCategory PricingCurrency PricingCurrencyContractedUnitPrice
PricingCurrencyEffectiveCost PricingCurrencyListUnitPrice PricingQuantity PricingUnit ProviderName PublisherName
RegionId RegionName ResourceId ResourceName ResourceType ServiceCategory ServiceName ServiceProviderName
ServiceSubcategory SkuId SkuMeter SkuPriceDetails SkuPriceId SubAccountId SubAccountName SubAccountType Tags
""".split())

# "X MUST be present" with no condition (Feature level Mandatory), ProviderName/PublisherName deprecated but still so
MANDATORY = ("BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
             "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd",
             "ChargePeriodStart", "ContractedCost", "EffectiveCost", "HostProviderName", "InvoiceIssuerName",
             "ListCost", "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory",
             "ServiceName", "ServiceProviderName")
# conditional columns whose condition yolocost meets, and RECOMMENDED / SHOULD-be-present ones
CONDITIONAL = {
    "AllocatedMethodId": "data generator supports data generator-calculated split cost allocation",
    "AllocatedResourceId": "... supports data generator-calculated split cost allocation",
    "AllocatedResourceName": "... supports data generator-calculated split cost allocation",
    "AllocatedTags": "... supports data generator-calculated split cost allocation",
    "ConsumedQuantity": "service provider supports the measurement of usage",
    "ConsumedUnit": "service provider supports the measurement of usage",
    "ListUnitPrice": "service provider publishes unit prices exclusive of discounts",
    "SkuId": "service provider supports unit pricing concepts and publishes price lists",
    "SkuMeter": "... publishes price lists",
    "SkuPriceDetails": "... publishes price lists",
    "SkuPriceId": "... publishes price lists",
    "Tags": "data generator supports setting user or provider-defined tags",
}
RECOMMENDED = ("AllocatedMethodDetails", "ChargeFrequency", "InvoiceId", "ServiceSubcategory")
# the 1.2 export's FOCUS columns, all kept in 1.3
DESIGN_COLUMNS_12 = ("BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
                     "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd",
                     "ChargePeriodStart", "ContractedCost", "EffectiveCost", "InvoiceIssuerName", "ListCost",
                     "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory",
                     "ServiceName", "ChargeFrequency", "ConsumedQuantity", "ConsumedUnit", "ContractedUnitPrice",
                     "ListUnitPrice", "PricingCategory", "ServiceSubcategory", "SkuId", "SkuPriceId", "SubAccountId",
                     "SubAccountName", "SubAccountType", "Tags")
SUMMABLE = ("BilledCost", "ContractedCost", "EffectiveCost", "ListCost", "PricingQuantity", "ConsumedQuantity")
NON_SUMMABLE = ("ListUnitPrice", "ContractedUnitPrice")
COSTS = ("BilledCost", "ContractedCost", "EffectiveCost", "ListCost")
NUMERIC = SUMMABLE + NON_SUMMABLE
DATETIMES = ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd")
KEY_VALUE = ("Tags", "AllocatedTags", "SkuPriceDetails")

SERVICE_CATEGORIES = {"AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
                      "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
                      "Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security",
                      "Storage", "Web", "Other"}
# the allowed (category, subcategory) pairs of the categories a GPU training cluster can fall under
SERVICE_SUBCATEGORIES = {
    ("AI and Machine Learning", s) for s in ("AI Platforms", "Bots", "Generative AI", "Machine Learning",
                                             "Natural Language Processing", "Other (AI and Machine Learning)")
} | {("Compute", s) for s in ("Containers", "End User Computing", "Quantum Compute", "Serverless Compute",
                              "Virtual Machines", "Other (Compute)")}
SKU_PRICE_PROPERTIES = {"CoreCount": "number", "DiskMaxIops": "number", "DiskSpace": "number", "DiskType": "string",
                        "GpuCount": "number", "InstanceType": "string", "InstanceSeries": "string",
                        "MemorySize": "number", "NetworkMaxIops": "number", "NetworkMaxThroughput": "number",
                        "OperatingSystem": "string", "Redundancy": "string", "StorageClass": "string"}
ALLOCATION_PROPERTIES = {"AllocatedRatio": "number", "UsageUnit": "string", "UsageQuantity": "number"}

# NumericFormat: integer or decimal, optional E notation "mEn" with a sign only on a negative exponent
NUMBER = re.compile(r"-?\d+(\.\d+)?(E-?\d+)?")
UTC_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
PLACEHOLDERS = {"null", "none", "nan", "n/a", "na", "not applicable", "-", "(none)", "(unallocated)", "undefined"}

# UnitFormat base units
DATA_SIZE_UNITS = {p + s for p in ("", "K", "M", "G", "T", "P", "E") for s in ("b", "B")} | \
    {p + "i" + s for p in ("K", "M", "G", "T", "P", "E") for s in ("b", "B")}
TIME_UNITS = {u + s for u in ("Year", "Month", "Day", "Hour", "Minute", "Second", "Millisecond", "Microsecond")
              for s in ("", "s")}


def unit_format_ok(unit: str) -> bool:
    """UnitFormat: simple '<units>', compound '<unit>-<units>', ratio '<...>/<unit>', optional
    integer quantities; every base unit an allowed data size or time unit or a capitalized noun."""
    def base(u: str) -> bool:
        return u in DATA_SIZE_UNITS or u in TIME_UNITS or re.fullmatch(r"[A-Z][A-Za-z]*", u) is not None

    def part(p: str, compound_ok: bool) -> bool:
        p = re.sub(r"^[1-9]\d* ", "", p)
        pieces = p.split("-")
        return (len(pieces) == 1 or (compound_ok and len(pieces) == 2)) and all(base(x) for x in pieces)

    num, _, den = unit.partition("/")
    return part(num, True) and (not den or part(den, False))


# --------------------------------------------------------------------------- reading the file


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str | None]]]:
    """Header and rows as a consumer reads them; an empty field is NULL (None)."""
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        rows = [{k: (v if v != "" else None) for k, v in row.items()} for row in reader]
        return list(reader.fieldnames or []), rows


@dataclasses.dataclass
class Json:
    """A JSON cell parsed strictly: duplicate keys fail, numbers are Decimal, `numbers` keeps
    every number token as written."""

    value: object
    numbers: list[str]

    @classmethod
    def parse(cls, text: str) -> "Json":
        numbers: list[str] = []

        def number(token: str) -> Decimal:
            numbers.append(token)
            return Decimal(token)

        def pairs(items):
            keys = [k for k, _ in items]
            assert len(keys) == len(set(keys)), f"duplicate keys in {text!r}"
            return dict(items)

        def constant(name):
            raise AssertionError(f"{name} in {text!r}")

        return cls(json.loads(text, parse_float=number, parse_int=number, object_pairs_hook=pairs,
                              parse_constant=constant), numbers)


def depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def is_number(value) -> bool:
    return isinstance(value, Decimal)


def scalar(value) -> bool:
    return value is None or isinstance(value, (str, bool, Decimal))


def decimals(text: str) -> int:
    return max(0, -D(text).as_tuple().exponent)


def origin_key(row) -> tuple:
    """The design's origin charge: local day x GPU model x charge kind x price period."""
    return row["x_ChargeDate"], row["x_GpuModel"], row["x_ChargeKind"], row["x_PricePeriod"]


def origins(rows) -> dict[tuple, list[dict]]:
    grouped: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        grouped[origin_key(row)].append(row)
    return dict(grouped)


def details(row) -> dict:
    return Json.parse(row["AllocatedMethodDetails"]).value


def elements(row) -> list[dict]:
    return details(row)["Elements"]


def focus_columns(header) -> list[str]:
    return [c for c in header if not c.startswith("x_")]


# --------------------------------------------------------------------------- the files


@dataclasses.dataclass
class Focus13:
    policy: str
    db: BuiltDb
    export: finance.FinanceExport
    header: list[str]
    rows: list[dict]

    @property
    def currency(self) -> str:
        return self.db.config.currency

    def origin_exact(self) -> dict[tuple, tuple[Decimal, Decimal]]:
        """Each origin charge's exact quantity and cost from the marts: {key: (quantity, cost)}."""
        got = self.db.query("""
            SELECT strftime(day, '%Y-%m-%d') AS day, gpu_model, charge_kind, sku_price_id,
                   sum(quantity) AS quantity, sum(cost) AS cost
            FROM mart_charge_daily WHERE month = ? GROUP BY ALL""", [MONTH])
        return {(r["day"], r["gpu_model"], r["charge_kind"], r["sku_price_id"]): (r["quantity"], r["cost"])
                for r in got}

    def total_cents(self) -> Decimal:
        con = duckdb.connect(str(self.db.path), read_only=True)
        try:
            return finance.total_cents(con, MONTH)
        finally:
            con.close()


@pytest.fixture(scope="module")
def exports(sample_built, tmp_path_factory):
    """exports(policy) -> Focus13: the sample month's 1.3 file under that allocation policy, each
    exported once (the proportional database is the sample loaded again with
    `[allocation] unallocated = "proportional"`)."""
    made: dict[str, Focus13] = {}

    def get(policy: str) -> Focus13:
        if policy not in made:
            db = sample_built() if policy == "none" else sample_built(unallocated_policy=policy)
            out = tmp_path_factory.mktemp(f"focus13-{policy}") / "finance.csv"
            result = finance.export_finance(db.config, MONTH, out, focus_version="1.3")
            header, rows = read_csv(result.path)
            assert rows, "the 1.3 export of the sample month has no rows"
            made[policy] = Focus13(policy, db, result, header, rows)
        return made[policy]

    return get


@pytest.fixture(scope="module", params=POLICIES)
def focus(request, exports) -> Focus13:
    return exports(request.param)


def column(focus: Focus13, name: str) -> list[str | None]:
    assert name in focus.header, f"{name} is not a column of the 1.3 file"
    return [row[name] for row in focus.rows]


# =========================================================================== dataset and columns


@pytest.mark.parametrize("name", MANDATORY)
def test_mandatory_column_is_present(focus, name):
    """<Column> MUST be present in a Cost and Usage FOCUS dataset (ProviderName and PublisherName:
    deprecated in 1.3, still Mandatory)."""
    assert name in focus.header


@pytest.mark.parametrize("name", sorted(CONDITIONAL))
def test_conditional_column_whose_condition_holds_is_present(focus, name):
    """<Column> MUST be present ... when <condition> (CONDITIONAL gives the condition yolocost meets)."""
    assert name in focus.header, CONDITIONAL[name]


@pytest.mark.parametrize("name", RECOMMENDED)
def test_recommended_column_is_present(focus, name):
    """<Column> is RECOMMENDED / SHOULD be present (AllocatedMethodDetails: when the data generator
    supports data generator-calculated split cost allocation)."""
    assert name in focus.header


def test_design_columns_are_all_there_once(focus):
    """The 1.3 file keeps every 1.2 column and adds the design's, each once."""
    expected = set(DESIGN_COLUMNS_12) | {"InvoiceId", "SkuMeter", "SkuPriceDetails", "ServiceProviderName",
                                         "HostProviderName", "AllocatedMethodId", "AllocatedMethodDetails",
                                         "AllocatedResourceId", "AllocatedResourceName", "AllocatedTags",
                                         "x_OriginChargeId"}
    assert expected <= set(focus.header), sorted(expected - set(focus.header))
    assert len(focus.header) == len(set(focus.header))


def test_every_non_custom_column_is_a_focus_13_column(focus):
    """FOCUS Dataset (glossary): all columns included must be defined in the FOCUS Columns section;
    other columns are custom columns prefixed with `x_`."""
    assert [c for c in focus_columns(focus.header) if c not in FOCUS13_COLUMNS] == []


def test_custom_columns_are_named_by_the_column_handling_rules(focus):
    """Custom column MUST include the `x_` prefix (everything outside FOCUS13_COLUMNS); SHOULD use
    Pascal case and only alphanumeric characters after it; SHOULD NOT exceed 50 characters."""
    custom = [c for c in focus.header if c not in FOCUS13_COLUMNS]
    assert custom and all(c.startswith("x_") for c in custom), custom
    for name in custom:
        assert re.fullmatch(r"x_[A-Z][A-Za-z0-9]*", name) and len(name) <= 50, name


def test_focus_columns_come_before_custom_columns(focus):
    """Column order: FOCUS columns SHOULD be listed before all custom columns, not intermixed."""
    kinds = ["custom" if c.startswith("x_") else "focus" for c in focus.header]
    assert kinds == sorted(kinds, key=lambda k: k == "custom")


# =========================================================================== attributes


@pytest.mark.parametrize("name", NUMERIC)
def test_numeric_columns_follow_numeric_format(focus, name):
    """NumericFormat: a single numeric value, integer or decimal (E notation 'mEn' only), no
    fractions, symbols, units, commas or '+'; <Metric> MUST be a valid decimal value."""
    for value in column(focus, name):
        if value is not None:
            assert NUMBER.fullmatch(value), (name, value)
            D(value)


@pytest.mark.parametrize("name", DATETIMES)
def test_datetimes_are_utc_instants(focus, name):
    """DateTimeFormat: UTC, ISO 8601 extended 'YYYY-MM-DDTHH:mm:ssZ' (date and time joined by 'T',
    two-digit HH mm ss, ending in 'Z')."""
    for value in column(focus, name):
        assert value is not None and UTC_INSTANT.fullmatch(value), (name, value)
        dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")


def test_focus_string_columns_hold_no_placeholder_or_blank_for_absent_values(focus):
    """NullHandling: FOCUS column MUST use NULL for absent values, MUST NOT contain empty strings
    or placeholder strings (e.g. "Not Applicable"); StringHandling: not-nullable string columns
    SHOULD NOT contain strings of whitespace only. (1.2's '(unallocated)' sub account is such a
    placeholder; unallocated capacity has a null AllocatedResourceId in 1.3.)"""
    for row in focus.rows:
        for name in focus_columns(focus.header):
            value = row[name]
            if value is None:
                continue
            assert value.strip() == value and value.strip(), (name, value)
            assert value.lower() not in PLACEHOLDERS, (name, value)


@pytest.mark.parametrize("name", KEY_VALUE)
def test_key_value_columns_follow_key_value_format(focus, name):
    """KeyValueFormat: a serialized JSON object (ECMA 404), keys unique, values number, string,
    boolean or null, never objects or arrays."""
    for value in column(focus, name):
        if value is None:
            continue
        parsed = Json.parse(value).value
        assert isinstance(parsed, dict), (name, value)
        assert all(scalar(v) for v in parsed.values()), (name, value)


def test_allocated_method_details_follows_json_object_format(focus):
    """AllocatedMethodDetails MUST be of type String and conform to JsonObjectFormat: a serialized
    JSON object, keys unique; SHOULD NOT exceed 3 levels of nesting; objects in an array of a
    consistent type, not repeated, not null."""
    for value in column(focus, "AllocatedMethodDetails"):
        assert value is not None
        parsed = Json.parse(value).value
        assert isinstance(parsed, dict) and depth(parsed) <= 3, value
        for array in (v for v in parsed.values() if isinstance(v, list)):
            assert all(isinstance(item, dict) for item in array), value
            assert len({json.dumps(item, sort_keys=True, default=str) for item in array}) == len(array), value


def test_billing_currency_follows_currency_format(focus):
    """BillingCurrency MUST conform to CurrencyFormat (ISO 4217 three-letter code) and be a
    national currency."""
    assert set(column(focus, "BillingCurrency")) == {focus.currency}
    assert re.fullmatch(r"[A-Z]{3}", focus.currency)


@design_conflict("energy is priced per 'kWh': not a capitalized base unit nor a hyphenated compound "
                 "(UnitFormat spelling would be e.g. 'Kilowatt-Hours')")
def test_units_follow_unit_format(focus):
    """PricingUnit, ConsumedUnit SHOULD conform to UnitFormat; "UsageUnit" values SHOULD conform
    to UnitFormat."""
    units = set(column(focus, "PricingUnit")) | set(column(focus, "ConsumedUnit"))
    units |= {e.get("UsageUnit") for row in focus.rows for e in elements(row)}
    units.discard(None)
    assert [u for u in sorted(units) if not unit_format_ok(u)] == []


# =========================================================================== split cost allocation


def test_every_row_is_an_allocated_charge_of_one_origin_charge(focus):
    """The dataset holds allocated charges, not their origin charges (an origin charge is derived
    from its allocated charges, never counted twice): every row carries AllocatedMethodId and
    x_OriginChargeId, one x_OriginChargeId per origin (day x GPU model x kind x price period),
    the same as AllocatedMethodDetails' x_OriginChargeId."""
    seen: dict[str, tuple] = {}
    for key, rows in origins(focus.rows).items():
        ids = {r["x_OriginChargeId"] for r in rows}
        assert len(ids) == 1 and None not in ids, (key, ids)
        (origin_id,) = ids
        assert seen.setdefault(origin_id, key) == key, f"{origin_id} names two origin charges"
        for row in rows:
            assert row["AllocatedMethodId"] is not None
            assert details(row).get("x_OriginChargeId") == origin_id


def test_dimensions_of_allocated_charges_match_their_origin_charge(focus):
    """FOCUS column values in allocated charges MUST match the corresponding value in the origin
    charge when the FOCUS column represents a dimension (all FOCUS columns but the metrics and the
    Allocated* columns, which describe the allocation itself)."""
    dims = [c for c in focus_columns(focus.header) if c not in NUMERIC and not c.startswith("Allocated")]
    differing = set()
    for rows in origins(focus.rows).values():
        differing |= {c for c in dims if len({r[c] for r in rows}) > 1}
    assert sorted(differing) == []


def test_non_summable_metrics_of_allocated_charges_match_their_origin_charge(focus):
    """FOCUS column values in allocated charges MUST match the corresponding value in the origin
    charge when the FOCUS column represents a non-summable metric (e.g., unit prices)."""
    for key, rows in origins(focus.rows).items():
        for name in NON_SUMMABLE:
            assert len({r[name] for r in rows}) == 1, (key, name)


def test_summable_quantities_add_up_to_their_origin_charge(focus):
    """The sum of FOCUS column values in allocated charges MUST match the corresponding value in
    the origin charge for a summable metric: PricingQuantity and ConsumedQuantity add up to the
    origin's quantity (mart_charge_daily, exact) within the printed precision; every origin charge
    of the month is split, none invented."""
    exact = focus.origin_exact()
    grouped = origins(focus.rows)
    assert set(grouped) == set(exact)
    for key, rows in grouped.items():
        for name in ("PricingQuantity", "ConsumedQuantity"):
            printed = [r[name] for r in rows]
            slack = sum(D(1).scaleb(-decimals(v)) / 2 for v in printed)
            assert abs(sum(D(v) for v in printed) - exact[key][0]) <= slack, (key, name)


def test_summable_costs_add_up_to_the_month(focus):
    """Summable costs of allocated charges add up to their origin charges and the origin charges to
    the cluster's month: each cost column sums to the month total, with no origin counted twice."""
    total = focus.total_cents()
    for name in COSTS:
        assert sum(D(v) for v in column(focus, name)) == total == focus.export.total, name


@design_conflict("allocated charges are the ledger's rows, whose cents are rounded project first: an origin "
                 "charge's cents can be 2 minor units off its exact cost (12 of 186 sample origins over the bound)")
def test_origin_charge_meets_the_list_cost_bound(focus):
    """The origin charge is itself a FOCUS charge (a charge record present in a FOCUS dataset): its
    ListCost MUST equal ListUnitPrice x PricingQuantity, relaxed to the documented bound (one
    minor unit plus the quantities' printed precision times the price); its ListCost and
    PricingQuantity are the sums of its allocated charges'."""
    minor = D(1).scaleb(-minor_unit(focus.currency))
    over = {}
    for key, rows in origins(focus.rows).items():
        price = D(rows[0]["ListUnitPrice"])
        quantity = sum(D(r["PricingQuantity"]) for r in rows)
        slack = minor + price * sum(D(1).scaleb(-decimals(r["PricingQuantity"])) for r in rows) / 2
        gap = abs(sum(D(r["ListCost"]) for r in rows) - price * quantity)
        if gap > slack:
            over[key] = gap
    assert over == {}


def test_tags_of_allocated_charges_include_the_origin_charge_tags(focus):
    """FOCUS column values in allocated charges MUST include the same keys and values present in
    Tags in the origin charge: Tags is the origin's (the same within an origin charge) and
    AllocatedTags MUST NOT include tags already present in Tags."""
    for key, rows in origins(focus.rows).items():
        assert len({r["Tags"] for r in rows}) == 1, key
        tags = Json.parse(rows[0]["Tags"]).value if rows[0]["Tags"] else {}
        for row in rows:
            if row["AllocatedTags"] is not None:
                assert set(Json.parse(row["AllocatedTags"]).value).isdisjoint(tags), (key, row["AllocatedTags"])


def test_the_split_cost_allocation_methods_are_documented(focus):
    """The split cost allocation method MUST be documented and accessible to practitioners, and
    data generator documentation of a method MUST make reference to a single AllocatedMethodId
    value: each AllocatedMethodId of the file is named in docs/, by one method each."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md")))
    for method in sorted(set(column(focus, "AllocatedMethodId"))):
        assert method in text, f"AllocatedMethodId {method!r} is not documented in docs/"


# =========================================================================== Allocated* columns


def test_allocated_method_id_is_never_null(focus):
    """AllocatedMethodId MUST NOT be null when a charge is related to a data generator-calculated
    split cost allocation (every row is); String; one id per charge kind's method (GPU time by
    held GPU-seconds, energy by metered kWh)."""
    by_kind = defaultdict(set)
    for row in focus.rows:
        assert row["AllocatedMethodId"] is not None
        by_kind[row["x_ChargeKind"]].add(row["AllocatedMethodId"])
    assert set(by_kind) == {"gpu", "energy"}
    assert by_kind["gpu"].isdisjoint(by_kind["energy"])


def test_proportional_policy_has_its_own_allocated_method_id(exports):
    """A documented method maps to a single AllocatedMethodId: sharing unallocated capacity is a
    different method, so the proportional file names an id the other does not."""
    ids = {policy: {r["AllocatedMethodId"] for r in exports(policy).rows} for policy in POLICIES}
    assert ids["proportional"] - ids["none"]


def test_allocated_method_details_is_never_null(focus):
    """AllocatedMethodDetails SHOULD NOT be null when a charge is related to a data
    generator-calculated split cost allocation."""
    assert None not in column(focus, "AllocatedMethodDetails")


def test_allocated_method_details_schema(focus):
    """AllocatedMethodDetails MUST have a top-level key "Elements" holding an array; each item MUST
    be an object conforming to KeyValueFormat; FOCUS-defined property keys spelled and typed as
    specified (AllocatedRatio number, UsageUnit string, UsageQuantity number); other keys MUST begin
    with "x_"; the root MAY hold data generator items besides "Elements" (yolocost's: x_ named)."""
    for row in focus.rows:
        parsed = details(row)
        assert isinstance(parsed.get("Elements"), list) and parsed["Elements"], row["AllocatedMethodDetails"]
        assert all(k == "Elements" or k.startswith("x_") for k in parsed), list(parsed)
        for element in parsed["Elements"]:
            assert isinstance(element, dict) and all(scalar(v) for v in element.values()), element
            for key, value in element.items():
                if ALLOCATION_PROPERTIES.get(key) == "number":
                    assert is_number(value), (key, value)
                elif key in ALLOCATION_PROPERTIES:
                    assert isinstance(value, str), (key, value)
                else:
                    assert key.startswith("x_"), key


def test_allocated_ratio_is_a_numeric_ratio_in_every_element(focus):
    """"AllocatedRatio" MUST be included inside each "Elements" object, a decimal value compatible
    with NumericFormat representing the allocated charge's percentage of the origin charge; every
    number in the column is written in NumericFormat ("UsageQuantity" MUST be compatible too)."""
    for row in focus.rows:
        parsed = Json.parse(row["AllocatedMethodDetails"])
        assert all(NUMBER.fullmatch(n) for n in parsed.numbers), parsed.numbers
        for element in parsed.value["Elements"]:
            ratio = element.get("AllocatedRatio")
            assert is_number(ratio) and 0 <= ratio <= 1, element


def test_allocated_ratios_of_an_origin_charge_sum_to_exactly_one(focus):
    """Values for all "AllocatedRatio" properties across all allocated charges related to a single
    origin charge MUST sum up to 1 (100%): exactly, in decimal, as written."""
    for key, rows in origins(focus.rows).items():
        total = sum(e["AllocatedRatio"] for r in rows for e in elements(r))
        assert total == 1, (key, total)


def test_allocated_ratio_is_the_charge_share_of_its_origin(focus):
    """"AllocatedRatio" represents the allocated charge's percentage of the origin charge: its
    PricingQuantity over the origin's, within the precision the two are printed to."""
    for key, rows in origins(focus.rows).items():
        quantities = [D(r["PricingQuantity"]) for r in rows]
        whole = sum(quantities)
        if not whole:
            continue
        q_slack = sum(D(1).scaleb(-decimals(r["PricingQuantity"])) for r in rows)
        ratios = [e["AllocatedRatio"] for r in rows for e in elements(r)]
        r_slack = D(1).scaleb(-max(decimals(str(x)) for x in ratios))
        for row, quantity in zip(rows, quantities):
            (element,) = elements(row)
            ratio = element["AllocatedRatio"]
            assert abs(ratio - quantity / whole) <= r_slack + q_slack / whole, (key, row["AllocatedResourceId"])


def test_usage_unit_and_quantity_describe_what_set_the_ratio(focus):
    """"UsageUnit" MUST be included when "UsageQuantity" is; "UsageUnit" MUST capture the unit of
    the documented method (GPU-Hours for GPU time, kWh for energy: the row's ConsumedUnit);
    "UsageQuantity" SHOULD capture the quantity that determined "AllocatedRatio": ratio =
    UsageQuantity / the origin's sum, within printed precision."""
    for key, rows in origins(focus.rows).items():
        usage = []
        for row in rows:
            for element in elements(row):
                if "UsageQuantity" in element:
                    assert element.get("UsageUnit") == row["ConsumedUnit"], (key, element)
                    usage.append((element["AllocatedRatio"], element["UsageQuantity"]))
        whole = sum(q for _, q in usage)
        if not usage or not whole:
            continue
        q_slack = sum(D(1).scaleb(-decimals(str(q))) for _, q in usage)
        r_slack = D(1).scaleb(-max(decimals(str(r)) for r, _ in usage))
        for ratio, quantity in usage:
            assert abs(ratio - quantity / whole) <= r_slack + q_slack / whole, (key, ratio, quantity)


def test_allocated_resource_id_is_null_exactly_for_unallocated_capacity(focus):
    """AllocatedResourceId MUST be null when a charge represents the unallocated portion of the
    origin charge and MUST NOT be null when it represents an allocated portion (a project's own
    use or share, jobs without a project label)."""
    for row in focus.rows:
        unallocated = row["x_Bucket"] == "unallocated"
        assert (row["AllocatedResourceId"] is None) == unallocated, (row["x_Bucket"], row["AllocatedResourceId"])
    assert {r["x_Bucket"] for r in focus.rows} >= {"project", "unlabeled", "unallocated"}


def test_allocated_resource_ids_keep_the_project_names(focus):
    """StringHandling: string values MUST keep their original casing and spacing: the
    AllocatedResourceIds are the database's project names as they are, plus '(unlabeled)'."""
    projects = {r["project"] for r in focus.db.query(
        "SELECT DISTINCT project FROM mart_project_month WHERE month = ?", [MONTH])}
    ids = {r["AllocatedResourceId"] for r in focus.rows} - {None}
    assert ids == projects - {"(unallocated)"}
    assert "视觉质检" in ids


def test_allocated_resource_name_is_null_exactly_when_the_id_is(focus):
    """AllocatedResourceName MUST be null when AllocatedResourceId is null and MUST NOT be null
    otherwise; it MAY duplicate AllocatedResourceId."""
    for row in focus.rows:
        assert (row["AllocatedResourceName"] is None) == (row["AllocatedResourceId"] is None)


def test_allocated_tags_carry_the_allocated_resource_tags(focus):
    """AllocatedTags MUST include all applicable tags for the AllocatedResourceId (a project's rows:
    its project label) and the data generator MUST NOT alter tag values: no project value is made
    up where there is no label (unlabeled jobs, unallocated capacity)."""
    for row in focus.rows:
        tags = Json.parse(row["AllocatedTags"]).value if row["AllocatedTags"] else {}
        if row["x_Bucket"] == "project":
            assert tags.get("project") == row["AllocatedResourceId"], (row["AllocatedResourceId"], tags)
        else:
            assert tags.get("project") is None, (row["x_Bucket"], tags)


def test_user_defined_tag_key_is_not_prefixed(focus):
    """Data generator MUST NOT prefix tag keys when it has only one user-defined tag scheme: the
    project label is the 'project' key as it is."""
    keys = {k for r in focus.rows for name in ("Tags", "AllocatedTags") if r[name] for k in Json.parse(r[name]).value}
    assert "project" in keys


def test_data_generator_defined_tag_keys_are_prefixed(focus):
    """Tags: provider-defined tag keys MUST be prefixed with a predetermined, provider-specified
    prefix unique to the tag scheme; AllocatedTags: data generator-defined tag keys MUST be so
    prefixed. Every key but the user's 'project' label is yolocost's: '<one prefix>/<key>'."""
    keys = {k for r in focus.rows for name in ("Tags", "AllocatedTags") if r[name] for k in Json.parse(r[name]).value}
    own = keys - {"project"}
    prefixes = {k.split("/", 1)[0] for k in own if "/" in k}
    assert all("/" in k for k in own) and len(prefixes) <= 1, sorted(own)


# =========================================================================== charge, billing, invoice


def test_charge_category_frequency_class_and_pricing_category(focus):
    """ChargeCategory MUST NOT be null, one of the allowed values ("Usage"); ChargeClass MUST be null
    for a row that corrects no invoiced period; ChargeFrequency MUST NOT be null, allowed value,
    "Usage-Based"; PricingCategory MUST be "Standard" when pricing is predetermined at the agreed
    rate (configured prices), not null for Usage."""
    for row in focus.rows:
        assert row["ChargeCategory"] == "Usage"
        assert row["ChargeClass"] is None
        assert row["ChargeFrequency"] == "Usage-Based"
        assert row["PricingCategory"] == "Standard"


def test_charge_description_is_not_null(focus):
    """ChargeDescription SHOULD NOT be null."""
    assert None not in column(focus, "ChargeDescription")


def test_charge_period_is_the_local_day(focus):
    """ChargePeriodStart MUST be the inclusive start bound and ChargePeriodEnd the exclusive end
    bound of the charge's effective period: the local day (23 or 25 hours on DST change days), as
    UTC instants."""
    tz = ZoneInfo(focus.db.config.timezone)
    for row in focus.rows:
        day = dt.date.fromisoformat(row["x_ChargeDate"])
        start = dt.datetime(day.year, day.month, day.day, tzinfo=tz).astimezone(dt.timezone.utc)
        nxt = day + dt.timedelta(days=1)
        end = dt.datetime(nxt.year, nxt.month, nxt.day, tzinfo=tz).astimezone(dt.timezone.utc)
        assert (row["ChargePeriodStart"], row["ChargePeriodEnd"]) == (
            start.strftime("%Y-%m-%dT%H:%M:%SZ"), end.strftime("%Y-%m-%dT%H:%M:%SZ"))


def test_billing_period_bounds_the_month(focus):
    """BillingPeriodStart MUST be the inclusive start bound, BillingPeriodEnd the exclusive end bound
    of the billing period (the local month, as UTC), MUST NOT be null; every charge period lies in it."""
    tz = ZoneInfo(focus.db.config.timezone)
    year, mon = (int(x) for x in MONTH.split("-"))
    start = dt.datetime(year, mon, 1, tzinfo=tz).astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    end = dt.datetime(year + mon // 12, mon % 12 + 1, 1, tzinfo=tz).astimezone(dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    for row in focus.rows:
        assert (row["BillingPeriodStart"], row["BillingPeriodEnd"]) == (start, end)
        assert start <= row["ChargePeriodStart"] < row["ChargePeriodEnd"] <= end


def test_billing_account_and_invoice_issuer(focus):
    """BillingAccountId MUST NOT be null, a unique identifier within the invoice issuer;
    BillingAccountName MUST NOT be null when a display name exists; InvoiceIssuerName MUST NOT be
    null."""
    for row in focus.rows:
        assert row["BillingAccountId"] and row["BillingAccountName"] and row["InvoiceIssuerName"]
    assert len({r["BillingAccountId"] for r in focus.rows}) == 1


def test_one_invoice_per_billing_period_carries_the_month(focus):
    """InvoiceId MUST NOT be null for a charge of an issued or pre-generated (provisional) invoice:
    one per billing account and billing period; the sum of BilledCost for an InvoiceId MUST match
    the payable amount of that invoice (the month's total as yolocost reports it); InvoiceHandling:
    all costs that appear on an invoice MUST be present in the dataset."""
    ids = {(r["BillingAccountId"], r["BillingPeriodStart"], r["InvoiceId"]) for r in focus.rows}
    assert len(ids) == 1 and None not in next(iter(ids)), ids
    assert sum(D(r["BilledCost"]) for r in focus.rows) == focus.total_cents()


def test_costs_are_not_null_and_in_the_billing_currency(focus):
    """BilledCost, ListCost, ContractedCost, EffectiveCost MUST NOT be null and MUST be denominated
    in the BillingCurrency (whole minor units); EffectiveCost and ContractedCost equal BilledCost and
    ListCost where no discount or commitment applies."""
    places = minor_unit(focus.currency)
    for row in focus.rows:
        for name in COSTS:
            assert row[name] is not None and decimals(row[name]) == places, (name, row[name])
        assert row["BilledCost"] == row["EffectiveCost"] == row["ListCost"] == row["ContractedCost"]


def test_list_and_contracted_cost_are_within_the_documented_bound(focus):
    """ListCost MUST equal ListUnitPrice x PricingQuantity (ContractedCost likewise): cents are
    rounded, so yolocost documents a bound: one minor unit plus the quantity's printed precision
    times the price."""
    minor = D(1).scaleb(-minor_unit(focus.currency))
    for row in focus.rows:
        slack = minor + D(row["ListUnitPrice"]) * D(1).scaleb(-decimals(row["PricingQuantity"])) / 2
        for cost, price in (("ListCost", "ListUnitPrice"), ("ContractedCost", "ContractedUnitPrice")):
            assert abs(D(row[price]) * D(row["PricingQuantity"]) - D(row[cost])) <= slack, (cost, row)


@design_conflict("costs are whole minor units: ListCost differs from ListUnitPrice x PricingQuantity by up to a cent")
def test_list_and_contracted_cost_equal_price_times_quantity(focus):
    """ListCost MUST equal the product of ListUnitPrice and PricingQuantity when neither is null;
    ContractedCost MUST equal the product of ContractedUnitPrice and PricingQuantity."""
    for row in focus.rows:
        assert D(row["ListUnitPrice"]) * D(row["PricingQuantity"]) == D(row["ListCost"])
        assert D(row["ContractedUnitPrice"]) * D(row["PricingQuantity"]) == D(row["ContractedCost"])


def test_unit_prices_are_the_configured_prices(focus):
    """ListUnitPrice and ContractedUnitPrice MUST NOT be null when SkuPriceId is not null, MUST be
    non-negative decimals in the BillingCurrency; SkuPriceId MUST support the lookup of the
    ListUnitPrice: it is the configured price (the price list) in effect on the charge's day."""
    config = focus.db.config
    for row in focus.rows:
        day = dt.date.fromisoformat(row["x_ChargeDate"])
        if row["x_ChargeKind"] == "gpu":
            listed = [p for p in config.prices if p.gpu_model == row["x_GpuModel"] and p.effective_from <= day]
            price = (max(listed, key=lambda p: p.effective_from).price_per_gpu_hour if listed
                     else config.default_price_per_gpu_hour)
        else:
            price = max((p for p in config.energy_prices if p.effective_from <= day),
                        key=lambda p: p.effective_from).price_per_kwh
        assert D(row["ListUnitPrice"]) == D(row["ContractedUnitPrice"]) == price >= 0, row["SkuPriceId"]


def test_quantities_and_units_are_not_null_for_usage(focus):
    """PricingQuantity and ConsumedQuantity MUST NOT be null when ChargeCategory is "Usage" and
    ChargeClass is not "Correction"; PricingUnit / ConsumedUnit MUST NOT be null when the quantity is
    not null."""
    for row in focus.rows:
        for quantity, unit in (("PricingQuantity", "PricingUnit"), ("ConsumedQuantity", "ConsumedUnit")):
            assert row[quantity] is not None and row[unit] is not None, (quantity, row)


# =========================================================================== providers, service, sub account


def test_service_and_host_provider(focus):
    """ServiceProviderName MUST NOT be null; HostProviderName MUST NOT be null for infrastructure
    and MUST equal ServiceProviderName when the host is neither chosen by the customer nor exposed;
    ProviderName and PublisherName (deprecated) MUST NOT be null."""
    for row in focus.rows:
        assert row["ServiceProviderName"] and row["HostProviderName"] == row["ServiceProviderName"]
        assert row["ProviderName"] and row["PublisherName"]


def test_service_name_has_one_allowed_category_and_subcategory(focus):
    """ServiceName MUST NOT be null and MUST have one and only one ServiceCategory; ServiceCategory
    MUST be an allowed value; ServiceSubcategory MUST NOT be null, MUST be an allowed value with one
    parent ServiceCategory; ServiceName SHOULD have one ServiceSubcategory."""
    pairs = defaultdict(set)
    for row in focus.rows:
        assert row["ServiceName"] and row["ServiceCategory"] in SERVICE_CATEGORIES
        assert (row["ServiceCategory"], row["ServiceSubcategory"]) in SERVICE_SUBCATEGORIES
        pairs[row["ServiceName"]].add((row["ServiceCategory"], row["ServiceSubcategory"]))
    assert all(len(v) == 1 for v in pairs.values()), dict(pairs)


def test_sub_account_columns_are_null_together(focus):
    """SubAccountId MUST be null when a charge is not related to a sub account (the origin charge is
    cluster capacity; projects are AllocatedResourceIds); SubAccountName and SubAccountType MUST be
    null when SubAccountId is null (and not null when it is not)."""
    for row in focus.rows:
        present = row["SubAccountId"] is not None
        assert (row["SubAccountName"] is not None) == present and (row["SubAccountType"] is not None) == present
    assert {r["SubAccountId"] for r in focus.rows} == {None}


# =========================================================================== SKU columns


def test_sku_id_is_not_null_and_stays_across_prices(focus):
    """SkuId MUST NOT be null for Usage; MUST remain consistent regardless of factors that change
    the price but not the functionality: one SkuId per GPU model over the month's price change."""
    per_model = defaultdict(set)
    for row in focus.rows:
        assert row["SkuId"] is not None
        if row["x_ChargeKind"] == "gpu":
            per_model[row["x_GpuModel"]].add(row["SkuId"])
    assert all(len(v) == 1 for v in per_model.values()), dict(per_model)
    prices = {(r["SkuId"], r["ListUnitPrice"]) for r in focus.rows if r["x_ChargeKind"] == "gpu"}
    assert len(prices) > len({s for s, _ in prices}), "the sample month changes a price"


def test_sku_price_id_has_one_parent_sku_id(focus):
    """SkuPriceId MUST NOT be null for Usage and MUST have one and only one parent SkuId."""
    parents = defaultdict(set)
    for row in focus.rows:
        assert row["SkuPriceId"] is not None
        parents[row["SkuPriceId"]].add(row["SkuId"])
    assert all(len(v) == 1 for v in parents.values()), dict(parents)


def test_sku_price_id_remains_consistent_over_time(focus):
    """SkuPriceId MUST remain consistent over time; a SKU Price excludes temporal validity (e.g.
    effective dates), so a change of unit price keeps the SkuPriceId: one SkuPriceId per SkuId and
    SkuPriceDetails."""
    ids = defaultdict(set)
    for row in focus.rows:
        ids[(row["SkuId"], row["SkuPriceDetails"], row["PricingUnit"])].add(row["SkuPriceId"])
    assert all(len(v) == 1 for v in ids.values()), {k: v for k, v in ids.items() if len(v) > 1}


def test_sku_meter_is_set_and_consistent(focus):
    """SkuMeter MUST be null when SkuId is null, SHOULD NOT be null when it is not, and SHOULD remain
    consistent over time for a given SkuId."""
    meters = defaultdict(set)
    for row in focus.rows:
        assert row["SkuMeter"] is not None
        meters[row["SkuId"]].add(row["SkuMeter"])
    assert all(len(v) == 1 for v in meters.values()), dict(meters)


def test_sku_price_details_properties(focus):
    """SkuPriceDetails MUST be null when SkuPriceId is null; MUST be associated with its SkuPriceId
    (the same for every charge of it); property keys MUST begin with "x_" unless FOCUS-defined,
    FOCUS-defined keys spelled and typed as specified, keys SHOULD be PascalCase; properties not
    applicable to the SKU price MUST NOT be included (no GpuCount on energy); GpuCount: numeric, for
    one PricingUnit (a GPU-hour is one GPU's)."""
    per_price = defaultdict(set)
    for row in focus.rows:
        per_price[row["SkuPriceId"]].add(row["SkuPriceDetails"])
        if row["SkuPriceDetails"] is None:
            assert row["x_ChargeKind"] == "energy", "GPU time has a FOCUS-defined property, GpuCount"
            continue
        props = Json.parse(row["SkuPriceDetails"]).value
        for key, value in props.items():
            if key in SKU_PRICE_PROPERTIES:
                assert is_number(value) if SKU_PRICE_PROPERTIES[key] == "number" else isinstance(value, str), key
            else:
                assert re.fullmatch(r"x_[A-Z][A-Za-z0-9]*", key), key
        if row["x_ChargeKind"] == "gpu":
            count = props.get("GpuCount")
            assert is_number(count) and count > 0, props
            assert count == 1 or any(k.startswith("x_") for k in props), props  # a MIG profile: an x_ key says which
        else:
            assert "GpuCount" not in props, props
    assert all(len(v) == 1 for v in per_price.values()), dict(per_price)
