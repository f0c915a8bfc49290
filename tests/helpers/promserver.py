"""A real Prometheus for tests: backfill OpenMetrics with promtool, serve the blocks on 127.0.0.1.

    skip_or_fail_without_prometheus()
    backfill(sample / "metrics.om", tmp / "data")
    with PrometheusServer(tmp / "data") as prom:
        requests.get(prom.url + "/api/v1/query", params={"query": "up"})

Both binaries come with the Debian package `prometheus` (2.42); `make test-deps` installs it.
The server keeps backfilled blocks (retention 100y: retention counts from the newest block,
so the default 15d would delete a backfilled month at start-up), has no scrape jobs unless
given, and logs to `prometheus-<port>.log` beside the data folder. For a live scrape (an
empty data folder and exporters on loopback), pass `scrape_configs=scrape_job(...) + ...`.
"""

from __future__ import annotations

import base64
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

PROMETHEUS, PROMTOOL = "prometheus", "promtool"

# Basic auth for tests: a fixed user and password and its bcrypt hash (cost 5, checked by
# tests/synth/test_synth_openmetrics.py against a real server), so no bcrypt package is needed.
TEST_USER = "yolocost"
TEST_PASSWORD = "yolocost-test-password"
TEST_PASSWORD_BCRYPT = "$2b$05$zv2dDXpFydusACSroEQWG.a3nsIvKHqcnrikpOK8G8m7hfafsZaOy"


class PrometheusError(RuntimeError):
    pass


def missing_binaries() -> list[str]:
    return [b for b in (PROMETHEUS, PROMTOOL) if shutil.which(b) is None]


def skip_or_fail_without_prometheus() -> None:
    """Fail (never skip: CI must not pass by skipping) when prometheus or promtool is missing."""
    missing = missing_binaries()
    if missing:
        import pytest

        pytest.fail(
            f"{' and '.join(missing)} not found on PATH: run `make test-deps` "
            "(installs the Debian package prometheus, which brings both)",
            pytrace=False,
        )


def backfill(om_file, data_dir, *, max_block_duration: str = "24h", timeout: float = 600) -> str:
    """Write TSDB blocks from an OpenMetrics file into data_dir; promtool's output on success."""
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    cmd = [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", f"--max-block-duration={max_block_duration}",
           str(om_file), str(data_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise PrometheusError(
            f"promtool backfill of {om_file} failed (exit {proc.returncode}):\n{(proc.stderr or proc.stdout)[-4000:]}"
        )
    return proc.stdout


def bcrypt_hash(password: str) -> str:
    """A bcrypt hash for Prometheus' web config: the constant for TEST_PASSWORD, else computed."""
    if password == TEST_PASSWORD:
        return TEST_PASSWORD_BCRYPT
    try:
        import bcrypt  # optional; not a dependency of the project

        return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=5)).decode()
    except ImportError:
        pass
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # Python < 3.13 with libxcrypt

        hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=32))
    if not hashed or not hashed.startswith("$2"):
        raise PrometheusError("cannot make a bcrypt hash here: use TEST_PASSWORD or install bcrypt")
    return hashed


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_job(name: str, targets: list[str], interval: str = "1s") -> str:
    """One `scrape_configs` item for PrometheusServer: a live scrape of host:port targets
    (loopback exporters in tests) every `interval`, labels as the targets serve them."""
    listed = ", ".join(_yaml_str(t) for t in targets)
    return (f"  - job_name: {_yaml_str(name)}\n    scrape_interval: {interval}\n    scrape_timeout: {interval}\n"
            f"    honor_labels: true\n    static_configs:\n      - targets: [{listed}]\n")


def _yaml_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


class LoopbackServer:
    """A server process on 127.0.0.1 at a free port, logging to `log_path`; a context manager.

    A subclass names itself (`name`, for messages), its readiness path and error class, and
    launches the process in `_launch` (with `self.port` chosen); `_cleanup` runs after stop."""

    name = "server"
    ready_path = "/"
    error: type[Exception] = RuntimeError

    def __init__(self, ready_timeout: float = 60.0):
        self.ready_timeout = ready_timeout
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def headers(self) -> dict[str, str]:
        return {}

    def ssl_context(self):
        """The TLS context readiness is checked with (None: plain HTTP)."""
        return None

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except (OSError, AttributeError):
            return "(no log)"

    def _check_binaries(self) -> None:
        """Raise `error` when the binaries are missing."""

    def _launch(self) -> None:
        raise NotImplementedError

    def start(self):
        self._check_binaries()
        for attempt in range(3):  # a port taken between free_port() and bind: try another
            self.port = free_port()
            self._launch()
            try:
                self._wait_ready()
                return self
            except self.error:
                self.stop()
                if attempt == 2 or "address already in use" not in self.log_tail():
                    raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        last = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise self.error(
                    f"{self.name} exited with {self.proc.returncode} before it was ready; log {self.log_path}:\n"
                    + self.log_tail()
                )
            try:
                req = urllib.request.Request(self.url + self.ready_path, headers=self.headers())
                with urllib.request.urlopen(req, timeout=2, context=self.ssl_context()) as resp:
                    if resp.status == 200:
                        return
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.2)
        raise self.error(
            f"{self.name} on {self.url} not ready after {self.ready_timeout:.0f} s ({last}); log {self.log_path}:\n"
            + self.log_tail()
        )

    def _cleanup(self) -> None:
        """What stop() removes after the process has ended."""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
        self._cleanup()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class PrometheusServer(LoopbackServer):
    """A prometheus process on 127.0.0.1 serving data_dir; a context manager.

    copy: serve a copy of data_dir (Prometheus writes into its data folder and locks it; a
      copy lets several servers use one backfill). scrape_configs: YAML list items (text) for
      `scrape_configs:`, none by default. extra_flags: e.g. ("--query.max-samples=1000",).
      basic_auth: {user: password} for `--web.config.file`; then `.auth` holds the first pair.
    """

    name = "prometheus"
    ready_path = "/-/ready"
    error = PrometheusError

    def __init__(self, data_dir, *, copy: bool = False, scrape_configs: str | None = None,
                 extra_flags=(), basic_auth: dict[str, str] | None = None, web_config: str | None = None,
                 ready_timeout: float = 60.0):
        self.source = Path(data_dir)
        self.copy = copy
        self.scrape_configs = scrape_configs
        self.extra_flags = tuple(extra_flags)
        self.basic_auth = dict(basic_auth or {})
        self.web_config = web_config
        super().__init__(ready_timeout)
        self.data_dir: Path | None = None

    @property
    def auth(self) -> tuple[str, str] | None:
        return next(iter(self.basic_auth.items()), None)

    def headers(self) -> dict[str, str]:
        if not self.auth:
            return {}
        token = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
        return {"Authorization": f"Basic {token}"}

    def _launch(self) -> None:
        parent = self.source.parent
        if self.copy:
            self.data_dir = parent / f"{self.source.name}-copy-{self.port}"
            shutil.copytree(self.source, self.data_dir)
        else:
            self.data_dir = self.source
            self.data_dir.mkdir(parents=True, exist_ok=True)
        conf = parent / f"prometheus-{self.port}.yml"
        text = "global:\n  scrape_interval: 30s\n  evaluation_interval: 30s\n"
        text += f"scrape_configs:\n{self.scrape_configs}\n" if self.scrape_configs else "scrape_configs: []\n"
        conf.write_text(text, encoding="utf-8")
        flags = [
            f"--config.file={conf}",
            f"--storage.tsdb.path={self.data_dir}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        web = self.web_config
        if web is None and self.basic_auth:
            web = "basic_auth_users:\n" + "".join(
                f"  {_yaml_str(u)}: {_yaml_str(bcrypt_hash(p))}\n" for u, p in self.basic_auth.items()
            )
        if web is not None:
            web_path = parent / f"prometheus-{self.port}-web.yml"
            web_path.write_text(web, encoding="utf-8")
            flags.append(f"--web.config.file={web_path}")
        self.log_path = parent / f"prometheus-{self.port}.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([PROMETHEUS, *flags, *self.extra_flags], stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_for_targets(self, count: int, timeout: float = 30.0) -> None:
        """Wait until `count` scrape targets have been scraped once (up or down): Prometheus
        takes up new targets a few seconds after it starts, and a live test should not lose them."""
        import json

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            req = urllib.request.Request(self.url + "/api/v1/targets", headers=self.headers())
            with urllib.request.urlopen(req, timeout=5) as resp:
                active = json.load(resp)["data"]["activeTargets"]
            if sum(1 for t in active if t.get("health") in ("up", "down")) >= count:
                return
            time.sleep(0.2)
        raise PrometheusError(f"prometheus on {self.url}: fewer than {count} targets scraped after {timeout:.0f} s")

    def _check_binaries(self) -> None:
        missing = missing_binaries()
        if missing:
            raise PrometheusError(f"{' and '.join(missing)} not found: run `make test-deps`")

    def _cleanup(self) -> None:
        if self.copy and self.data_dir is not None and self.data_dir != self.source:
            shutil.rmtree(self.data_dir, ignore_errors=True)
