"""Config loading: the shipped files parse, values are validated, credentials stay hidden."""

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path

import pytest

from yolocost.config import Config, find_config_path, load_config, parse_config
from yolocost.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "yolocost.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_example_config_parses_with_its_documented_values(monkeypatch):
    monkeypatch.setenv("YOLOCOST_PROMETHEUS_TOKEN", "s3cret-token")
    config = load_config(ROOT / "yolocost.example.toml")
    assert config.timezone == "Europe/Berlin"
    assert config.currency == "EUR"
    assert config.grain_seconds == 300
    assert config.thresholds.busy_util_percent == 70
    assert config.thresholds.breaker_min_hours == 2
    assert config.prices[0].price_per_gpu_hour == Decimal("2.93")
    assert config.database == ROOT / "yolocost.duckdb"
    assert config.prometheus.bearer_token is None  # shown commented out: a fresh machine has no secrets


def test_example_config_with_its_token_line_uncommented_reads_the_token(tmp_path, monkeypatch):
    text = (ROOT / "yolocost.example.toml").read_text(encoding="utf-8")
    line = '# bearer_token_env = "YOLOCOST_PROMETHEUS_TOKEN"'
    assert line in text
    monkeypatch.setenv("YOLOCOST_PROMETHEUS_TOKEN", "s3cret-token")
    config = load_config(write(tmp_path, text.replace(line, line[2:])))
    assert config.prometheus.bearer_token == "s3cret-token"
    assert "s3cret" not in repr(config)


def test_config_check_passes_on_the_shipped_example_without_secrets(tmp_path, cli):
    """First contact: `config check` of the example as shipped, on a machine with no
    credentials in its environment and no other config around."""

    env = {k: v for k, v in os.environ.items() if not k.startswith("YOLOCOST")}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    result = cli("--config", str(ROOT / "yolocost.example.toml"), "config", "check", cwd=tmp_path, env=env,
                 timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "error" not in result.stderr
    assert "gpu-cluster-1 (Europe/Berlin, EUR)" in result.stdout
    assert "bearer token" not in result.stdout


def test_sample_config_prices_match_the_generator():
    from yolocost import synth

    config = load_config(ROOT / "sample_data" / "yolocost.toml")
    got = [(p.gpu_model, p.effective_from.isoformat(), p.price_per_gpu_hour) for p in config.prices]
    want = sorted((p["gpu_model"], p["effective_from"], Decimal(p["price_per_gpu_hour"])) for p in synth.DEMO_PRICES)
    assert got == want
    assert [(e.effective_from.isoformat(), e.price_per_kwh) for e in config.energy_prices] == [
        (e["effective_from"], Decimal(e["price_per_kwh"])) for e in synth.DEMO_ENERGY_PRICES
    ]
    assert config.timezone == synth.DEMO_TIMEZONE


def test_defaults_without_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("YOLOCOST_CONFIG", raising=False)
    assert find_config_path(None) is None
    assert load_config() == Config()


def test_config_found_through_env_then_cwd(tmp_path, monkeypatch):
    path = write(tmp_path, '[cluster]\nname = "from-env"\n')
    monkeypatch.setenv("YOLOCOST_CONFIG", str(path))
    assert load_config().cluster == "from-env"
    monkeypatch.delenv("YOLOCOST_CONFIG")
    monkeypatch.chdir(tmp_path)
    assert load_config().cluster == "from-env"


def test_prices_read_as_exact_decimals_from_strings_and_floats():
    config = parse_config({"prices": [
        {"gpu_model": "A", "price_per_gpu_hour": 2.93},
        {"gpu_model": "B", "price_per_gpu_hour": "0.1", "effective_from": dt.date(2026, 10, 15)},
    ]})
    assert [p.price_per_gpu_hour for p in config.prices] == [Decimal("2.93"), Decimal("0.1")]
    assert config.prices[1].effective_from == dt.date(2026, 10, 15)


def test_secret_from_file_is_read_and_hidden(tmp_path):
    (tmp_path / "pw").write_text("hunter2\n")
    path = write(tmp_path, '[prometheus]\nusername = "ops"\npassword_file = "pw"\n')
    config = load_config(path)
    assert config.prometheus.password == "hunter2"
    assert "hunter2" not in repr(config) and "hunter2" not in repr(config.prometheus)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[cluster]\nnmae = "x"\n', "cluster.nmae: unknown key"),
        ("[cluster\n", "not valid TOML"),
        ('[[prices]]\ngpu_model = "A"\nprice_per_gpu_hour = "-1"\n', "prices[0].price_per_gpu_hour: must not be negative"),
        ('[[prices]]\ngpu_model = "A"\nprice_per_gpu_hour = "abc"\n', "prices[0].price_per_gpu_hour: not a decimal"),
        ('[[prices]]\ngpu_model = "A"\n', "prices[0].price_per_gpu_hour: missing"),
        ('[cluster]\ntimezone = "Mars/Olympus"\n', "cluster.timezone: unknown time zone"),
        ('[cluster]\ncurrency = "dollars"\n', "cluster.currency"),
        ("[ingest]\ngrain_seconds = 7\n", "ingest.grain_seconds"),
        ('[cluster]\ntimezone = "Asia/Kolkata"\n[ingest]\ngrain_seconds = 3600\n', "would cross local midnight"),
        ("[thresholds]\nbusy_util_percent = 170\n", "thresholds.busy_util_percent: must be between 0"),
        ("[thresholds]\nidle_util_percent = 80\n", "idle_util_percent: must be below busy"),
        ("[tag_policy]\npattern = \"([\"\n", "tag_policy.pattern: not a valid RE2 regular expression"),
        ("[tag_policy]\npattern = '^(?!latest).*$'\n", "tag_policy.pattern: not a valid RE2 regular expression"),
        ('[[prices]]\ngpu_model = "A"\nprice_per_gpu_hour = "1e15"\n', "prices[0].price_per_gpu_hour: must be below"),
        ('[[prices]]\ngpu_model = "A"\nprice_per_gpu_hour = 1000000\n', "must be below 1,000,000, got 1000000"),
        ('[[prices]]\ngpu_model = "*"\nprice_per_gpu_hour = "1"\n', "prices[0].gpu_model: '*' is reserved"),
        ("[thresholds]\nbreaker_loss_delta = inf\n", "thresholds.breaker_loss_delta: must be a finite number"),
        ('[prometheus]\nurl = "localhost:9090"\n', "prometheus.url: must start with http"),
        ('[prometheus]\nurl = "http://127.0.0.1:190900"\n', "prometheus.url: Port out of range"),
        ('[prometheus]\nscrape_interval_seconds = 45\n', "does not divide the 300 s grain"),
        ('[prometheus]\nselector = "cluster=prod"\n', "prometheus.selector: must be label matchers"),
        ('[ingest]\nutilization = "gpu"\n', "ingest.utilization: must be auto, dev or prof"),
        ('[database]\nmemory_limit = "lots"\n', "database.memory_limit: must be an amount such as 3GB"),
        ('[reports]\nprivate = "yes"\n', "reports.private: must be true or false"),
        ('[database]\nmemory_limit = "1KB"\n', "database.memory_limit: must be at least 128MB"),
        ("[prometheus]\nretries = 2.5\n", "prometheus.retries: must be a whole number from 0 to 20, got 2.5"),
        ("[prometheus]\nconcurrency = 1.9\n", "prometheus.concurrency: must be a whole number from 1 to 32"),
        ('[prometheus]\nbearer_token_env = "YOLOCOST_TEST_UNSET_VAR"\n', "YOLOCOST_TEST_UNSET_VAR is not set"),
        ('[prometheus]\nusername = "ops"\n', "basic auth needs both"),
        ('[[prices]]\ngpu_model = "A"\nprice_per_gpu_hour = 1\n[[prices]]\ngpu_model = "A"\nprice_per_gpu_hour = 2\n',
         "second price for 'A'"),
    ],
)
def test_bad_config_names_file_key_and_problem_in_one_line(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text = str(info.value)
    assert message in text
    assert str(path) in text
    assert "\n" not in text


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.toml")


TOKEN_FILE = ('[prometheus]\nbearer_token_file = "token"\n', "prometheus.bearer_token_file")
PASSWORD_ENV = ('[prometheus]\nusername = "ops"\npassword_env = "YOLOCOST_TEST_PASSWORD"\n', "prometheus.password_env")


@pytest.mark.parametrize("value, problem, where", [
    ("TOKEN-LINE-1\nTOKEN-LINE-2\n", "holds more than one word or line", (TOKEN_FILE, PASSWORD_ENV)),
    ("TOKEN-A TOKEN-B", "holds more than one word or line", (TOKEN_FILE,)),  # a password may hold spaces
    ("TOKEN-\u20ac", "outside Latin-1", (TOKEN_FILE, PASSWORD_ENV)),
])
def test_a_malformed_credential_is_refused_without_showing_it(tmp_path, monkeypatch, value, problem, where):
    """requests would put such a value into its own error text (InvalidHeader), so it is
    refused while loading the config, and the message never holds the value."""
    (tmp_path / "token").write_text(value, encoding="utf-8")
    monkeypatch.setenv("YOLOCOST_TEST_PASSWORD", value)
    for text, key in where:
        with pytest.raises(ConfigError) as info:
            load_config(write(tmp_path, text))
        message = str(info.value)
        assert key in message and problem in message
        assert "TOKEN" not in message and "\n" not in message


@pytest.mark.parametrize("url", ["http://alice:TOPSECRET@prom:9090", "ftp://alice:TOPSECRET@prom:9090"])
def test_credentials_in_the_url_are_refused_without_showing_them(tmp_path, url):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, f'[prometheus]\nurl = "{url}"\n'))
    assert "prometheus.url: holds a user name or password" in str(info.value)
    assert "TOPSECRET" not in str(info.value)


def test_a_password_may_hold_spaces(tmp_path, monkeypatch):
    monkeypatch.setenv("YOLOCOST_TEST_PASSWORD", "correct horse battery staple")
    config = load_config(write(tmp_path, PASSWORD_ENV[0]))
    assert config.prometheus.password == "correct horse battery staple"


# ---- every number within its range

OUT_OF_RANGE = [
    ("[ingest]\nretention_days = 1000000\n", "ingest.retention_days: must be a whole number from 1 to 36500, got 1000000"),
    ("[ingest]\nretention_days = 0\n", "ingest.retention_days: must be a whole number from 1 to 36500, got 0"),
    ("[ingest]\nretention_days = 30.5\n", "ingest.retention_days: must be a whole number from 1 to 36500, got 30.5"),
    ("[ingest]\ngrain_seconds = 7200\n", "ingest.grain_seconds: must be whole minutes dividing an hour (60..3600)"),
    ("[prometheus]\nchunk_hours = 0\n", "prometheus.chunk_hours: must be a whole number from 1 to 744, got 0"),
    ("[prometheus]\nchunk_hours = 1000000000000\n", "prometheus.chunk_hours: must be a whole number from 1 to 744"),
    ("[prometheus]\nscrape_interval_seconds = 0\n",
     "prometheus.scrape_interval_seconds: must be a whole number from 1 to 3600, got 0"),
    ("[prometheus]\nscrape_interval_seconds = 7200\n",
     "prometheus.scrape_interval_seconds: must be a whole number from 1 to 3600, got 7200"),
    ("[prometheus]\ntimeout_seconds = 0.5\n", "prometheus.timeout_seconds: must be between 1 and 3600, got 0.5"),
    ("[prometheus]\ntimeout_seconds = 1e9\n", "prometheus.timeout_seconds: must be between 1 and 3600"),
    ("[prometheus]\nretries = 21\n", "prometheus.retries: must be a whole number from 0 to 20, got 21"),
    ("[prometheus]\nconcurrency = 0\n", "prometheus.concurrency: must be a whole number from 1 to 32, got 0"),
    ("[prometheus]\nconcurrency = 33\n", "prometheus.concurrency: must be a whole number from 1 to 32, got 33"),
    ('[database]\nmemory_limit = "1001TB"\n', "database.memory_limit: must be at most 1000TB, got '1001TB'"),
    ('[database]\nmemory_limit = "99999999999999999999TB"\n', "database.memory_limit: must be at most 1000TB"),
    ('[database]\nmemory_limit = "100MB"\n', "database.memory_limit: must be at least 128MB, got '100MB'"),
    ("[thresholds]\nbreaker_loss_delta = 1e308\n", "thresholds.breaker_loss_delta: must be between 0 and 1000"),
    ("[thresholds]\nbreaker_loss_delta = -0.1\n", "thresholds.breaker_loss_delta: must be between 0 and 1000"),
    ("[thresholds]\nbreaker_min_hours = 745\n", "thresholds.breaker_min_hours: must be between 0.1 and 744"),
    ("[thresholds]\nbreaker_util_percent = -1\n", "thresholds.breaker_util_percent: must be between 0 and 100"),
    ("[policies]\nidle_reclaim_minutes = 0\n", "policies.idle_reclaim_minutes: must be between 1 and 44640"),
    ("[policies]\nidle_reclaim_protect_minutes = 1441\n",
     "policies.idle_reclaim_protect_minutes: must be between 0 and 1440"),
    ("[policies]\nidle_reclaim_util_percent = 101\n", "policies.idle_reclaim_util_percent: must be between 0 and 100"),
    ('[[prices]]\ngpu_model = "A"\nprice_per_gpu_hour = "0.0000001"\n', "prices[0].price_per_gpu_hour: at most 6 decimal"),
    ('[[energy_prices]]\nprice_per_kwh = "1e6"\n', "energy_prices[0].price_per_kwh: must be below 1,000,000"),
]


@pytest.mark.parametrize("text, message", OUT_OF_RANGE, ids=[m.split(":")[0] + "=" + t.split("= ")[-1].strip()
                                                             for t, m in OUT_OF_RANGE])
def test_a_number_outside_its_range_names_the_key_and_the_range(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_the_ends_of_each_range_are_accepted(tmp_path):
    config = load_config(write(tmp_path, (
        '[database]\nmemory_limit = "1000TB"\n[ingest]\nretention_days = 36500\n'
        "[prometheus]\nchunk_hours = 744\nscrape_interval_seconds = 300\ntimeout_seconds = 3600\n"
        "[thresholds]\nbreaker_loss_delta = 1000\nbreaker_min_hours = 744\n")))
    assert (config.retention_days, config.prometheus.chunk_hours, config.thresholds.breaker_loss_delta) == (36500, 744, 1000)
    assert load_config(write(tmp_path, "[ingest]\nretention_days = 1\n[prometheus]\nchunk_hours = 1\n")).retention_days == 1


@pytest.mark.parametrize("argv", [("config", "check"), ("prune", "--dry-run"), ("monthly", "--month", "2026-10"),
                                  ("report", "--month", "2026-10"), ("query", "SELECT 1")])
def test_a_retention_of_a_million_days_stops_every_command_in_one_line(tmp_path, argv):
    """It passed `config check`, and `prune --dry-run` and the end of `monthly` failed on an
    OverflowError in date arithmetic."""
    from helpers.builders import assert_one_line_error, yolocost

    (tmp_path / "yolocost.toml").write_text("[ingest]\nretention_days = 1000000\n")
    assert_one_line_error(yolocost(*argv, cwd=tmp_path),
                          "ingest.retention_days: must be a whole number from 1 to 36500, got 1000000")


# ---- credentials only over TLS

TOKEN = '[prometheus]\nurl = "{url}"\nbearer_token_file = "token"\n'
PASSWORD = '[prometheus]\nurl = "{url}"\nusername = "ops"\npassword_file = "token"\n'


@pytest.mark.parametrize("text, key", [(TOKEN, "prometheus.bearer_token_file"), (PASSWORD, "prometheus.password_file")])
@pytest.mark.parametrize("url", ["http://prometheus.example.internal:9090", "http://10.0.0.7:9090", "http://[2001:db8::1]",
                                 "http://localhost.example.com", "http://128.0.0.1"])
def test_a_credential_over_plain_http_to_another_host_is_refused(tmp_path, text, key, url):
    (tmp_path / "token").write_text("s3cret-token\n")
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text.format(url=url)))
    message = str(info.value)
    assert f"{key}: the credential would be sent in clear text" in message
    assert "allow_insecure_http = true" in message and "s3cret" not in message and "\n" not in message
    allowed = load_config(write(tmp_path, text.format(url=url) + "allow_insecure_http = true\n"))
    assert allowed.prometheus.allow_insecure_http and allowed.prometheus.url == url.rstrip("/")


@pytest.mark.parametrize("url", ["https://prometheus.example.internal:9090", "http://127.0.0.1:9090",
                                 "http://127.8.9.10", "http://[::1]:9090", "http://localhost:9090",
                                 "http://LOCALHOST."])
def test_a_credential_over_tls_or_to_this_machine_is_accepted(tmp_path, url):
    """Loopback traffic never leaves the host (a port-forward, a local proxy, the test servers)."""
    (tmp_path / "token").write_text("s3cret-token\n")
    for text in (TOKEN, PASSWORD):
        config = load_config(write(tmp_path, text.format(url=url)))
        assert config.prometheus.bearer_token == "s3cret-token" or config.prometheus.password == "s3cret-token"


def test_plain_http_without_credentials_needs_no_permission(tmp_path):
    config = load_config(write(tmp_path, '[prometheus]\nurl = "http://prometheus.example.internal:9090"\n'))
    assert not config.prometheus.allow_insecure_http


def test_allow_insecure_http_must_be_true_or_false(tmp_path):
    with pytest.raises(ConfigError, match="prometheus.allow_insecure_http: must be true or false"):
        load_config(write(tmp_path, '[prometheus]\nallow_insecure_http = "yes"\n'))


def test_the_client_refuses_a_credential_over_plain_http_too():
    """A PrometheusConfig made in code, not parsed from a file, meets the same rule."""
    from yolocost.config import PrometheusConfig, Secret
    from yolocost.promclient import PrometheusClient

    with pytest.raises(ConfigError, match="allow_insecure_http = true"):
        PrometheusClient(PrometheusConfig(url="http://prom.example:9090", bearer_token=Secret("t")))
    PrometheusClient(PrometheusConfig(url="http://prom.example:9090", bearer_token=Secret("t"),
                                      allow_insecure_http=True)).close()
    PrometheusClient(PrometheusConfig(url="http://127.0.0.1:9090", username="u", password=Secret("p"))).close()


@pytest.mark.parametrize("argv", [("config", "check"), ("ingest", "--month", "2026-10")])
def test_config_check_and_ingest_refuse_a_token_over_plain_http(tmp_path, argv):
    from helpers.builders import assert_one_line_error, yolocost

    (tmp_path / "token").write_text("s3cret-token\n")
    (tmp_path / "yolocost.toml").write_text(TOKEN.format(url="http://prometheus.example.internal:9090"))
    result = yolocost(*argv, cwd=tmp_path)
    assert_one_line_error(result, "prometheus.bearer_token_file: the credential would be sent in clear text",
                          "allow_insecure_http = true")
    assert "s3cret" not in result.stderr
