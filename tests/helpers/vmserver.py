"""A real VictoriaMetrics for tests: single node on 127.0.0.1, data imported over HTTP.

    fail_without_victoriametrics()
    with VictoriaMetricsServer(tmp / "vm") as vm:
        vm.import_openmetrics(sample / "metrics.om")
        requests.get(vm.url + "/api/v1/query", params={"query": "up"})

The binary comes with the Debian package `victoria-metrics` (1.79); `make test-deps` installs
it. It serves the Prometheus query API (`/api/v1/query`, `/api/v1/query_range`,
`/api/v1/series`); data goes in through `POST /api/v1/import/prometheus` as text exposition
lines with MILLISECOND timestamps (the OpenMetrics files the tests write carry seconds and
`# TYPE`/`# EOF` lines, which the import converts and drops), and is queryable after
`GET /internal/force_flush`. Retention is 100y so that generated months in the past are
kept, the response cache is off, and the server logs to `victoria-metrics-<port>.log` beside
the data folder.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import requests

from helpers.promserver import LoopbackServer

VICTORIA_METRICS = "victoria-metrics"
IMPORT_BATCH_BYTES = 8 << 20  # one import request per this much text


class VictoriaMetricsError(RuntimeError):
    pass


def fail_without_victoriametrics() -> None:
    """Fail (never skip: CI must not pass by skipping) when the binary is missing."""
    if shutil.which(VICTORIA_METRICS) is None:
        import pytest

        pytest.fail(f"{VICTORIA_METRICS} not found on PATH: run `make test-deps` "
                    "(installs the Debian package victoria-metrics)", pytrace=False)


def exposition_line(line: str) -> str | None:
    """One OpenMetrics sample line as a text exposition line with a millisecond timestamp;
    None for comments (`# TYPE`, `# EOF`) and blank lines. `name{labels} value seconds.mmm`."""
    if not line.strip() or line.startswith("#"):
        return None
    text = line.rstrip("\n")
    brace = text.rfind("}")
    fields = text[brace + 1:].split() if brace >= 0 else text.split()[1:]
    if len(fields) != 2:  # a sample without a timestamp would be stored at the import's time
        raise VictoriaMetricsError(f"not a sample line with a timestamp: {text[:200]!r}")
    head, _, ts = text.rpartition(" ")
    whole, _, frac = ts.partition(".")
    if len(frac) <= 3 and whole.isdigit() and (not frac or frac.isdigit()):
        ms = int(whole) * 1000 + int(frac.ljust(3, "0") or 0)
    else:
        ms = round(float(ts) * 1000)
    return f"{head} {ms}\n"


def exposition_batches(om_file) -> Iterator[bytes]:
    """The samples of an OpenMetrics file as exposition text, in batches of about
    IMPORT_BATCH_BYTES (a series may span batches: VictoriaMetrics merges them)."""
    batch: list[str] = []
    size = 0
    with open(om_file, encoding="utf-8") as fh:
        for line in fh:
            out = exposition_line(line)
            if out is None:
                continue
            batch.append(out)
            size += len(out)
            if size >= IMPORT_BATCH_BYTES:
                yield "".join(batch).encode("utf-8")
                batch, size = [], 0
    if batch:
        yield "".join(batch).encode("utf-8")


class VictoriaMetricsServer(LoopbackServer):
    """A victoria-metrics process on 127.0.0.1 storing into data_dir; a context manager.

    extra_flags: e.g. ("-search.maxSamplesPerQuery=1000",)."""

    name = "victoria-metrics"
    ready_path = "/health"
    error = VictoriaMetricsError

    def __init__(self, data_dir, *, extra_flags=(), ready_timeout: float = 60.0):
        super().__init__(ready_timeout)
        self.data_dir = Path(data_dir)
        self.extra_flags = tuple(extra_flags)

    def _check_binaries(self) -> None:
        if shutil.which(VICTORIA_METRICS) is None:
            raise VictoriaMetricsError(f"{VICTORIA_METRICS} not found: run `make test-deps`")

    def _launch(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # no response cache: data imported after a query must show in the next one, as in Prometheus
        flags = [f"-storageDataPath={self.data_dir}", f"-httpListenAddr=127.0.0.1:{self.port}",
                 "-retentionPeriod=100y", "-search.disableCache"]
        self.log_path = self.data_dir.parent / f"victoria-metrics-{self.port}.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([VICTORIA_METRICS, *flags, *self.extra_flags], stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def import_text(self, text: str | bytes) -> None:
        """Exposition lines (millisecond timestamps) into the store; call flush() before querying."""
        body = text.encode("utf-8") if isinstance(text, str) else text
        r = requests.post(self.url + "/api/v1/import/prometheus", data=body, timeout=600)
        if r.status_code // 100 != 2:
            raise VictoriaMetricsError(f"import refused (HTTP {r.status_code}): {r.text[:500]}")

    def import_openmetrics(self, om_file) -> None:
        """An OpenMetrics file (seconds) into the store, then flushed: queryable on return."""
        for batch in exposition_batches(om_file):
            self.import_text(batch)
        self.flush()

    def flush(self) -> None:
        """Make every imported sample visible to queries."""
        r = requests.get(self.url + "/internal/force_flush", timeout=120)
        if r.status_code // 100 != 2:
            raise VictoriaMetricsError(f"force_flush failed (HTTP {r.status_code}): {r.text[:500]}")
