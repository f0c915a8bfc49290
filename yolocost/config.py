"""Load and validate the TOML configuration; the only module that reads the environment.

Every other module receives a `Config`. Validation is strict: an unknown key, a value of
the wrong type or range, or a malformed file stops with one line naming the file, the key
and what is wrong (a `ConfigError`).
"""

from __future__ import annotations

import dataclasses
from urllib.parse import urlsplit
import datetime as dt
import ipaddress
import math
import os
import re
import sys
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import duckdb

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from .errors import ConfigError
from .money import is_currency
from .sqltext import literal

CONFIG_ENV = "YOLOCOST_CONFIG"
DEFAULT_CONFIG_NAME = "yolocost.toml"
# per GPU-hour or kWh: int_usage_priced's exact cost arithmetic (price in micro-units times
# a remainder below 3,600,000) stays in BIGINT below this
MAX_PRICE = Decimal(10) ** 6
FOCUS_VERSIONS = ("1.2", "1.3")  # the finance CSV's FOCUS versions (yolocost.finance)
DEFAULT_TAG_PATTERN = r"^[a-z0-9]+-yolo[a-z0-9]+-[a-z0-9]+-cu[0-9]+$"

# Ranges of the numeric settings that have no narrower rule below (yolocost.example.toml
# documents each): a value outside stops every command, `config check` included, with one line
# naming the key and its range, instead of failing later in date arithmetic or in DuckDB.
RETENTION_DAYS = (1, 36500)  # a century: long enough to mean "keep", short enough to stay a date
SCRAPE_INTERVAL_SECONDS = (1, 3600)  # it must also divide the grain, which is at most an hour
CHUNK_HOURS = (1, 744)  # 31 days per request; the ingest halves a chunk a server refuses
BREAKER_LOSS_DELTA = (0, 1000)  # far above any YOLO loss: larger values mean nothing more
MEMORY_LIMIT_BYTES = (128e6, 1000e12)  # 128MB: DuckDB's models need it; 1000TB: past any host


class Secret(str):
    """A credential: behaves as a string but never shows itself in repr or logs."""

    def __repr__(self) -> str:
        return "Secret('***')"


@dataclass(frozen=True)
class Price:
    """Price of one GPU-hour of a GPU model from a local date on (until the next entry)."""

    gpu_model: str
    effective_from: dt.date
    price_per_gpu_hour: Decimal


@dataclass(frozen=True)
class EnergyPrice:
    """Price of one kWh from a local date on."""

    effective_from: dt.date
    price_per_kwh: Decimal


@dataclass(frozen=True)
class PrometheusConfig:
    url: str = "http://localhost:9090"
    bearer_token: Secret | None = field(default=None, repr=False)
    username: str | None = None
    password: Secret | None = field(default=None, repr=False)
    ca_file: Path | None = None
    insecure_skip_verify: bool = False
    timeout_seconds: float = 60.0
    retries: int = 3
    scrape_interval_seconds: int = 30
    selector: str = ""
    chunk_hours: int = 24
    concurrency: int = 4
    accept_partial_responses: bool = False  # bill answers whose warnings say a part of the store was missing
    allow_insecure_http: bool = False  # send a token or password over plain http to a host not this one


@dataclass(frozen=True)
class Labels:
    """Which job/pod label carries each accounting dimension."""

    project: str = "project"
    user: str = "user"
    model_type: str = "model_type"
    image_tag: str = "image_tag"
    job_id: str = ""  # pod label naming the job (e.g. batch.kubernetes.io/job-name); "" = namespace/pod


@dataclass(frozen=True)
class Thresholds:
    busy_util_percent: float = 70.0
    idle_util_percent: float = 5.0
    breaker_util_percent: float = 40.0
    breaker_loss_delta: float = 0.001
    breaker_min_hours: float = 2.0


@dataclass(frozen=True)
class Policies:
    """What-if stopping policies replayed by mart_policy_savings (the breaker's own settings
    are the [thresholds] breaker_* keys)."""

    idle_reclaim_minutes: float = 5.0  # release a job after this long quiet
    idle_reclaim_util_percent: float = 5.0  # quiet: the job's utilization under this, no epoch ending
    idle_reclaim_protect_minutes: float = 15.0  # before each epoch end and after the last: validation, checkpoint
    # start-up grace: nothing is quiet until the job's first epoch ends (data loading, caching,
    # warm-up), for at most this long after its start; chosen by measurement (BENCHMARKS.md)
    idle_reclaim_startup_grace_minutes: float = 30.0


@dataclass(frozen=True)
class Config:
    source: Path | None = None
    cluster: str = "default"
    timezone: str = "UTC"
    currency: str = "USD"
    database: Path = Path("yolocost.duckdb")
    memory_limit: str = "3GB"  # DuckDB's own default is 80 % of RAM: too much for a shared cron host
    grain_seconds: int = 300
    utilization: str = "auto"
    retention_days: int = 90
    unallocated_policy: str = "none"  # [allocation] unallocated: none | proportional (yolocost.ledger)
    report_dir: Path = Path("reports")
    reports_private: bool = False  # [reports] private: month folders 0700, their files 0600
    focus_version: str = "1.2"  # [reports] focus_version: the finance CSV's FOCUS version (yolocost.finance)
    templates_dir: Path | None = None
    tag_pattern: str = DEFAULT_TAG_PATTERN
    default_price_per_gpu_hour: Decimal | None = None
    prices: tuple[Price, ...] = ()
    energy_prices: tuple[EnergyPrice, ...] = ()
    labels: Labels = Labels()
    thresholds: Thresholds = Thresholds()
    policies: Policies = Policies()
    prometheus: PrometheusConfig = PrometheusConfig()

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def with_database(self, database: Path) -> "Config":
        return dataclasses.replace(self, database=Path(database))


# --------------------------------------------------------------------------- loading


DEFAULT_MEMORY_LIMIT = "3GB"

# PromQL label matchers: name op "value", comma separated
_MATCHER = r'\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*'
_MATCHERS = rf"{_MATCHER}(,{_MATCHER})*"


def find_config_path(explicit: str | Path | None) -> Path | None:
    """The config file to use: --config, else $YOLOCOST_CONFIG, else ./yolocost.toml if present."""
    if explicit:
        return Path(explicit)
    from_env = os.environ.get(CONFIG_ENV)
    if from_env:
        return Path(from_env)
    local = Path.cwd() / DEFAULT_CONFIG_NAME
    return local if local.is_file() else None


def load_config(path: str | Path | None = None) -> Config:
    """Load the config file chosen by `find_config_path`, or the defaults if there is none."""
    chosen = find_config_path(path)
    if chosen is None:
        return Config()
    if not chosen.is_file():
        raise ConfigError(f"{chosen}: config file not found")
    try:
        data = tomllib.loads(chosen.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{chosen}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{chosen}: cannot read: {exc}") from None
    return parse_config(data, source=chosen)


def parse_config(data: dict[str, Any], source: Path | None = None) -> Config:
    """Validate a parsed TOML document into a Config; errors name the file and key."""
    return _Parser(source).parse(data)


class _Parser:
    def __init__(self, source: Path | None):
        self.source = source
        self.base = source.parent if source else Path.cwd()

    # ---- helpers
    def fail(self, key: str, what: str) -> ConfigError:
        where = str(self.source) if self.source else "config"
        return ConfigError(f"{where}: {key}: {what}")

    def table(self, data: dict, name: str, allowed: set[str]) -> dict:
        value = data.get(name, {})
        if not isinstance(value, dict):
            raise self.fail(name, "must be a table ([" + name + "])")
        self.no_unknown(value, allowed, name)
        return value

    def no_unknown(self, value: dict, allowed: set[str], prefix: str) -> None:
        for key in value:
            if key not in allowed:
                full = f"{prefix}.{key}" if prefix else key
                raise self.fail(full, f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def get(self, tbl: dict, prefix: str, key: str, kind: Callable[[str, Any], Any], default: Any) -> Any:
        if key not in tbl:
            return default
        return kind(f"{prefix}.{key}" if prefix else key, tbl[key])

    def string(self, key: str, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "must be a non-empty string")
        return value

    def version(self, key: str, value: Any) -> str:
        """A version such as "1.3", quoted or not (TOML reads 1.3 unquoted as a number)."""
        if isinstance(value, float) and not isinstance(value, bool):
            return repr(value)
        return self.string(key, value)

    def boolean(self, key: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def number(self, key: str, value: Any, low: float | None = None, high: float | None = None) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(key, f"must be a finite number, got {value!r}")
        if low is not None and value < low or high is not None and value > high:
            raise self.fail(key, f"must be between {low} and {high}, got {value}")
        return float(value)

    def integer(self, key: str, value: Any, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(key, f"must be a whole number from {low} to {high}, got {value!r}")
        return value

    def ranged(self, bounds: tuple[int, int]) -> Callable[[str, Any], int]:
        """A `get` kind: a whole number within `bounds` (inclusive)."""
        return lambda key, value: self.integer(key, value, *bounds)

    def positive_int(self, key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.fail(key, f"must be a positive integer, got {value!r}")
        return value

    def money(self, key: str, value: Any) -> Decimal:
        """A non-negative decimal; floats are read through their shortest repr (2.93 -> 2.93)."""
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise self.fail(key, f"must be a number or a decimal string, got {value!r}")
        try:
            amount = Decimal(repr(value) if isinstance(value, float) else str(value).strip())
        except InvalidOperation:
            raise self.fail(key, f"not a decimal number: {value!r}") from None
        if not amount.is_finite():
            raise self.fail(key, f"must be finite, got {value!r}")
        if amount < 0:
            raise self.fail(key, f"must not be negative, got {value}")
        if amount >= MAX_PRICE:
            raise self.fail(key, f"must be below {MAX_PRICE:,}, got {value}")
        if int(amount.as_tuple().exponent) < -6:
            raise self.fail(key, f"at most 6 decimal places, got {value}")
        return amount

    def date(self, key: str, value: Any) -> dt.date:
        if isinstance(value, dt.datetime):
            raise self.fail(key, "must be a date (YYYY-MM-DD), not a date-time")
        if isinstance(value, dt.date):
            return value
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value)
            except ValueError:
                pass
        raise self.fail(key, f"must be a date YYYY-MM-DD, got {value!r}")

    def path(self, key: str, value: Any) -> Path:
        path = Path(self.string(key, value)).expanduser()
        return path if path.is_absolute() else self.base / path

    def readable_file(self, key: str, value: Any) -> Path:
        """A path to a file that exists and can be read (checked now, not at the first request)."""
        path = self.path(key, value)
        try:
            with open(path, "rb"):
                pass
        except IsADirectoryError:
            raise self.fail(key, f"{path} is a folder, not a file") from None
        except OSError as exc:
            raise self.fail(key, f"cannot read {path}: {exc.strerror}") from None
        return path

    def secret(self, tbl: dict, prefix: str, name: str) -> Secret | None:
        """A credential given as `<name>_env` (variable name) or `<name>_file` (path)."""
        env_key, file_key = f"{name}_env", f"{name}_file"
        if env_key in tbl and file_key in tbl:
            raise self.fail(f"{prefix}.{env_key}", f"give either {env_key} or {file_key}, not both")
        if env_key in tbl:
            var = self.string(f"{prefix}.{env_key}", tbl[env_key])
            value = os.environ.get(var)
            if not value:
                raise self.fail(f"{prefix}.{env_key}", f"environment variable {var} is not set")
            return self.credential(f"{prefix}.{env_key}", f"environment variable {var}", value.strip())
        if file_key in tbl:
            secret_path = self.path(f"{prefix}.{file_key}", tbl[file_key])
            try:
                value = secret_path.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise self.fail(f"{prefix}.{file_key}", f"cannot read {secret_path}: {exc.strerror}") from None
            except UnicodeDecodeError:  # its text would show bytes of the secret: say only what is wrong
                raise self.fail(f"{prefix}.{file_key}", f"{secret_path} is not UTF-8 text") from None
            if not value:
                raise self.fail(f"{prefix}.{file_key}", f"{secret_path} is empty")
            return self.credential(f"{prefix}.{file_key}", str(secret_path), value)
        return None

    def credential(self, key: str, where: str, value: str) -> Secret:
        """A token or password as HTTP sends it: one line of Latin-1 text (a token also without
        spaces). The value itself never appears in the message."""
        if any((c.isspace() and (c != " " or "token" in key)) or not c.isprintable() for c in value):
            raise self.fail(key, f"{where} holds more than one word or line (spaces, tabs, newlines or control "
                                 "characters); it must hold the credential alone")
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            raise self.fail(key, f"{where} holds characters HTTP headers cannot carry (outside Latin-1)") from None
        return Secret(value)

    # ---- sections
    def parse(self, data: dict[str, Any]) -> Config:
        self.no_unknown(
            data,
            {"cluster", "database", "prometheus", "ingest", "labels", "thresholds",
             "tag_policy", "reports", "pricing", "prices", "energy_prices", "allocation", "policies"},
            "",
        )
        cluster = self.table(data, "cluster", {"name", "timezone", "currency"})
        database = self.table(data, "database", {"path", "memory_limit"})
        memory_limit = self.get(database, "database", "memory_limit", self.string, DEFAULT_MEMORY_LIMIT)
        amount = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)", memory_limit)
        if not amount:
            raise self.fail("database.memory_limit", f"must be an amount such as 3GB, got {memory_limit!r}")
        size = float(amount[1]) * {"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
                                   "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}[amount[2]]
        if size < MEMORY_LIMIT_BYTES[0]:  # too little for DuckDB to build even a small database's models
            raise self.fail("database.memory_limit", f"must be at least 128MB, got {memory_limit!r}")
        if size > MEMORY_LIMIT_BYTES[1]:  # DuckDB refuses its own maximum with a parser error
            raise self.fail("database.memory_limit", f"must be at most 1000TB, got {memory_limit!r}")
        ingest = self.table(data, "ingest", {"grain_seconds", "retention_days", "utilization"})
        reports = self.table(data, "reports", {"output_dir", "templates_dir", "private", "focus_version"})
        policy = self.table(data, "tag_policy", {"pattern"})
        pricing = self.table(data, "pricing", {"default_price_per_gpu_hour"})
        allocation = self.table(data, "allocation", {"unallocated"})
        unallocated_policy = self.get(allocation, "allocation", "unallocated", self.string, "none")
        focus_version = self.get(reports, "reports", "focus_version", self.version, "1.2")
        if focus_version not in FOCUS_VERSIONS:
            raise self.fail("reports.focus_version", f"must be {' or '.join(FOCUS_VERSIONS)}, got {focus_version!r}")
        if unallocated_policy not in ("none", "proportional"):
            raise self.fail("allocation.unallocated", f"must be none or proportional, got {unallocated_policy!r}")

        timezone = self.get(cluster, "cluster", "timezone", self.string, "UTC")
        try:
            ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise self.fail("cluster.timezone", f"unknown time zone {timezone!r}") from None
        currency = self.get(cluster, "cluster", "currency", self.string, "USD")
        if not re.fullmatch(r"[A-Z]{3}", currency):
            raise self.fail("cluster.currency", f"must be an ISO 4217 code such as USD, got {currency!r}")
        if not is_currency(currency):
            raise self.fail("cluster.currency", f"{currency!r} is not an ISO 4217 currency code (such as USD, EUR, JPY)")

        grain = self.get(ingest, "ingest", "grain_seconds", self.positive_int, 300)
        if grain % 60 or 3600 % grain:
            raise self.fail("ingest.grain_seconds", f"must be whole minutes dividing an hour (60..3600), got {grain}")

        for probe in (dt.datetime(2026, 1, 15), dt.datetime(2026, 7, 15)):
            offset = ZoneInfo(timezone).utcoffset(probe).total_seconds()  # type: ignore[union-attr]  # never None
            if offset % grain:
                raise self.fail(
                    "ingest.grain_seconds",
                    f"{grain} s intervals would cross local midnight in {timezone} (UTC offset {offset / 3600:+g} h); "
                    "choose a grain that divides the offset",
                )

        utilization = self.get(ingest, "ingest", "utilization", self.string, "auto")
        if utilization not in ("auto", "dev", "prof"):
            raise self.fail("ingest.utilization", f"must be auto, dev or prof, got {utilization!r}")
        prometheus = self.prometheus(data)
        if grain % prometheus.scrape_interval_seconds:
            raise self.fail(
                "prometheus.scrape_interval_seconds",
                f"{prometheus.scrape_interval_seconds} s does not divide the {grain} s grain",
            )

        pattern = self.get(policy, "tag_policy", "pattern", self.string, DEFAULT_TAG_PATTERN)
        try:
            re.compile(pattern)
            # the SQL models match with DuckDB's RE2, which lacks look-arounds and backreferences
            duckdb.execute(f"SELECT regexp_full_match('', {literal(pattern)})")  # no parameter: see sqltext
        except (re.error, duckdb.Error) as exc:
            first = str(exc).splitlines()[0]
            raise self.fail("tag_policy.pattern", f"not a valid RE2 regular expression: {first}") from None

        default_price = None
        if "default_price_per_gpu_hour" in pricing:
            default_price = self.money("pricing.default_price_per_gpu_hour", pricing["default_price_per_gpu_hour"])

        return Config(
            source=self.source,
            cluster=self.get(cluster, "cluster", "name", self.string, "default"),
            timezone=timezone,
            currency=currency,
            database=self.get(database, "database", "path", self.path, self.base / "yolocost.duckdb"),
            memory_limit=memory_limit,
            grain_seconds=grain,
            utilization=utilization,
            retention_days=self.get(ingest, "ingest", "retention_days", self.ranged(RETENTION_DAYS), 90),
            unallocated_policy=unallocated_policy,
            report_dir=self.get(reports, "reports", "output_dir", self.path, self.base / "reports"),
            templates_dir=self.get(reports, "reports", "templates_dir", self.path, None),
            reports_private=self.get(reports, "reports", "private", self.boolean, False),
            focus_version=focus_version,
            tag_pattern=pattern,
            default_price_per_gpu_hour=default_price,
            prices=self.prices(data.get("prices", [])),
            energy_prices=self.energy_prices(data.get("energy_prices", [])),
            labels=self.labels(data),
            thresholds=self.thresholds(data),
            policies=self.policies(data),
            prometheus=prometheus,
        )

    def entries(self, value: Any, name: str) -> list[dict]:
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail(name, f"must be an array of tables ([[{name}]])")
        return value

    def prices(self, value: Any) -> tuple[Price, ...]:
        out, seen = [], set()
        for i, entry in enumerate(self.entries(value, "prices")):
            key = f"prices[{i}]"
            self.no_unknown(entry, {"gpu_model", "effective_from", "price_per_gpu_hour"}, key)
            for required in ("gpu_model", "price_per_gpu_hour"):
                if required not in entry:
                    raise self.fail(f"{key}.{required}", "missing")
            if entry["gpu_model"] == "*":
                raise self.fail(f"{key}.gpu_model", "'*' is reserved: set [pricing] default_price_per_gpu_hour instead")
            price = Price(
                gpu_model=self.string(f"{key}.gpu_model", entry["gpu_model"]),
                effective_from=self.get(entry, key, "effective_from", self.date, dt.date(1970, 1, 1)),
                price_per_gpu_hour=self.money(f"{key}.price_per_gpu_hour", entry["price_per_gpu_hour"]),
            )
            if (price.gpu_model, price.effective_from) in seen:
                raise self.fail(key, f"second price for {price.gpu_model!r} from {price.effective_from}")
            seen.add((price.gpu_model, price.effective_from))
            out.append(price)
        return tuple(sorted(out, key=lambda p: (p.gpu_model, p.effective_from)))

    def energy_prices(self, value: Any) -> tuple[EnergyPrice, ...]:
        out, seen = [], set()
        for i, entry in enumerate(self.entries(value, "energy_prices")):
            key = f"energy_prices[{i}]"
            self.no_unknown(entry, {"effective_from", "price_per_kwh"}, key)
            if "price_per_kwh" not in entry:
                raise self.fail(f"{key}.price_per_kwh", "missing")
            price = EnergyPrice(
                effective_from=self.get(entry, key, "effective_from", self.date, dt.date(1970, 1, 1)),
                price_per_kwh=self.money(f"{key}.price_per_kwh", entry["price_per_kwh"]),
            )
            if price.effective_from in seen:
                raise self.fail(key, f"second energy price from {price.effective_from}")
            seen.add(price.effective_from)
            out.append(price)
        return tuple(sorted(out, key=lambda p: p.effective_from))

    def labels(self, data: dict) -> Labels:
        names = {f.name for f in dataclasses.fields(Labels)}
        tbl = self.table(data, "labels", names)
        return Labels(**{k: self.string(f"labels.{k}", v) for k, v in tbl.items()})

    def thresholds(self, data: dict) -> Thresholds:
        tbl = self.table(data, "thresholds", {f.name for f in dataclasses.fields(Thresholds)})
        values: dict[str, float] = {}
        for key, value in tbl.items():
            if key.endswith("_percent"):
                values[key] = self.number(f"thresholds.{key}", value, 0, 100)
            elif key == "breaker_loss_delta":
                values[key] = self.number(f"thresholds.{key}", value, *BREAKER_LOSS_DELTA)
            else:
                values[key] = self.number(f"thresholds.{key}", value, 0.1, 24 * 31)
        result = Thresholds(**values)
        if result.idle_util_percent >= result.busy_util_percent:
            raise self.fail("thresholds.idle_util_percent", "must be below busy_util_percent")
        return result

    def policies(self, data: dict) -> Policies:
        tbl = self.table(data, "policies", {f.name for f in dataclasses.fields(Policies)})
        values: dict[str, float] = {}
        for key, value in tbl.items():
            if key.endswith("_percent"):
                values[key] = self.number(f"policies.{key}", value, 0, 100)
            elif key in ("idle_reclaim_protect_minutes", "idle_reclaim_startup_grace_minutes"):
                values[key] = self.number(f"policies.{key}", value, 0, 24 * 60)
            else:
                values[key] = self.number(f"policies.{key}", value, 1, 24 * 60 * 31)
        return Policies(**values)

    def prometheus(self, data: dict) -> PrometheusConfig:
        prefix = "prometheus"
        tbl = self.table(
            data,
            prefix,
            {"url", "bearer_token_env", "bearer_token_file", "username", "password_env",
             "password_file", "ca_file", "insecure_skip_verify", "timeout_seconds", "retries",
             "scrape_interval_seconds", "selector", "chunk_hours", "concurrency", "accept_partial_responses",
             "allow_insecure_http"},
        )
        url = self.get(tbl, prefix, "url", self.string, PrometheusConfig.url)
        try:
            parts = urlsplit(url)
            parts.port
        except ValueError as exc:
            raise self.fail("prometheus.url", f"{exc}") from None
        if "@" in parts.netloc:  # checked first: the messages below show the URL
            raise self.fail("prometheus.url", "holds a user name or password; give them as username and "
                                              "password_env/password_file, never in the file itself")
        if not re.match(r"^https?://[^/\s]+", url):
            raise self.fail("prometheus.url", f"must start with http:// or https://, got {url!r}")
        username = self.get(tbl, prefix, "username", self.string, None)
        password = self.secret(tbl, prefix, "password")
        if (username is None) != (password is None):
            raise self.fail("prometheus.username", "basic auth needs both username and password_env/password_file")
        bearer_token = self.secret(tbl, prefix, "bearer_token")
        allow_http = self.get(tbl, prefix, "allow_insecure_http", self.boolean, False)
        sent = [k for k in ("bearer_token_env", "bearer_token_file", "password_env", "password_file") if k in tbl]
        if sent and not allow_http and credentials_in_clear(url, True):
            raise self.fail(f"prometheus.{sent[0]}", insecure_http_message(url))
        retries = self.get(tbl, prefix, "retries", lambda k, v: self.integer(k, v, 0, 20), 3)
        selector = self.get(tbl, prefix, "selector", self.string, "")
        if selector and not re.fullmatch(_MATCHERS, selector):
            raise self.fail("prometheus.selector", f'must be label matchers such as cluster="prod", got {selector!r}')
        return PrometheusConfig(
            url=url.rstrip("/"),
            bearer_token=bearer_token,
            username=username,
            password=password,
            ca_file=self.get(tbl, prefix, "ca_file", self.readable_file, None),
            insecure_skip_verify=self.get(tbl, prefix, "insecure_skip_verify", self.boolean, False),
            timeout_seconds=self.get(tbl, prefix, "timeout_seconds", lambda k, v: self.number(k, v, 1, 3600), 60.0),
            retries=retries,
            scrape_interval_seconds=self.get(tbl, prefix, "scrape_interval_seconds",
                                             self.ranged(SCRAPE_INTERVAL_SECONDS), 30),
            selector=selector,
            chunk_hours=self.get(tbl, prefix, "chunk_hours", self.ranged(CHUNK_HOURS), 24),
            concurrency=self.get(tbl, prefix, "concurrency", lambda k, v: self.integer(k, v, 1, 32), 4),
            accept_partial_responses=self.get(tbl, prefix, "accept_partial_responses", self.boolean, False),
            allow_insecure_http=allow_http,
        )


def insecure_http_message(url: str) -> str:
    """What to do about credentials that `credentials_in_clear` finds would go out unencrypted."""
    return (f"the credential would be sent in clear text to {url} (plain http:// to another host); use an "
            "https:// url, or set [prometheus] allow_insecure_http = true if the network is trusted")


def credentials_in_clear(url: str, has_credentials: bool) -> bool:
    """Whether credentials would cross a network unencrypted: plain http to a host other
    than this one. A loopback address (127.0.0.0/8, ::1) or `localhost` is exempt: the bytes
    never leave the machine (a port-forward, a local auth proxy, a test server)."""
    parts = urlsplit(url)
    if not has_credentials or parts.scheme.lower() != "http":
        return False
    host = (parts.hostname or "").rstrip(".").lower()
    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return True
