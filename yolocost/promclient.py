"""A small Prometheus HTTP API client that tells the ingest *why* a query failed.

prometheus-api-client folds every failure into one exception string; the ingest needs the
API's `errorType` to react (split a chunk on "too many samples" or a timeout, stop on bad
credentials), so this module talks to the API with requests and maps each failure to a
one-line error. Credentials go into the session's headers, never into a message.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

import requests

from .config import PrometheusConfig
from .errors import YolocostError


class PrometheusError(YolocostError):
    """Prometheus could not be reached or refused a request."""


class QueryTooBig(PrometheusError):
    """The server refused a query as too large (samples, points) or too slow: split it."""


@dataclass(frozen=True)
class BuildInfo:
    """The version a server reports, for progress messages only: it says nothing reliable
    about how the server answers queries (VictoriaMetrics reports none, Thanos and Mimir
    their own), which the ingest measures instead (storeprobe.py)."""

    version: str

    @property
    def name(self) -> str:
        known = self.version not in ("", "unknown")
        return f"Prometheus {self.version}" if known else "a Prometheus-compatible store"


def display_url(url: str) -> str:
    """The server URL without any user:password part."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


class PrometheusClient:
    """GET/POST against /api/v1 with retries (exponential backoff) for transient failures."""

    def __init__(self, config: PrometheusConfig, sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self.where = display_url(config.url)
        self._sleep = sleep
        s = requests.Session()
        if config.bearer_token is not None:
            s.headers["Authorization"] = f"Bearer {config.bearer_token}"
        if config.username is not None and config.password is not None:
            s.auth = (config.username, str(config.password))
        if config.insecure_skip_verify:
            s.verify = False
            import urllib3

            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        elif config.ca_file is not None:
            s.verify = str(config.ca_file)
        # given with each request: requests lets REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE replace
        # a session's verify, and the config's TLS settings must win (None: requests' default)
        self._verify = False if config.insecure_skip_verify else (str(config.ca_file) if config.ca_file else None)
        self.session = s

    def close(self) -> None:
        self.session.close()

    # ---- API calls
    def buildinfo(self) -> BuildInfo:
        try:
            data = self._call("GET", "/api/v1/status/buildinfo", {})
        except PrometheusError as exc:
            if "HTTP 404" in str(exc):  # some compatible servers lack it
                return BuildInfo("unknown")
            raise
        return BuildInfo(str(data.get("version") or "unknown") if isinstance(data, dict) else "unknown")

    def query(self, promql: str, at: float) -> list[dict]:
        path = "/api/v1/query"
        data = self._call("POST", path, {"query": promql, "time": _ts(at)})
        # an instant query of a range selector answers a matrix: raw samples under "values"
        matrix = isinstance(data, dict) and data.get("resultType") == "matrix"
        return self._result(path, data, "values" if matrix else "value")

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[dict]:
        params = {"query": promql, "start": _ts(start), "end": _ts(end), "step": _ts(step)}
        path = "/api/v1/query_range"
        return self._result(path, self._call("POST", path, params), "values")

    def series(self, match: str, start: float, end: float) -> list[dict]:
        path = "/api/v1/series"
        data = self._call("POST", path, {"match[]": match, "start": _ts(start), "end": _ts(end)})
        if not isinstance(data, list):
            raise self.malformed(path, f"data is {_kind(data)}, not a list of label sets")
        for labels in data:
            if not _is_label_set(labels):
                raise self.malformed(path, f"a label set is {_kind(labels)}, not an object of strings")
        return data

    def metric_names(self, match: str, start: float, end: float) -> list[str]:
        """Names of the metrics with series matching `match` in [start, end]: whether a metric
        is there at all, without the label sets of its series (some 5 a GPU a day)."""
        path = "/api/v1/label/__name__/values"  # GET only (Prometheus answers POST with 405)
        data = self._call("GET", path, {"match[]": match, "start": _ts(start), "end": _ts(end)})
        if not isinstance(data, list) or not all(isinstance(name, str) for name in data):
            raise self.malformed(path, f"data is {_kind(data)}, not a list of names")
        return data

    # ---- answer shapes
    def _result(self, path: str, data: Any, points: str) -> list[dict]:
        """`data.result` of a query answer, each series checked to be {"metric": {...}, points: [...]}
        (`value` for an instant query, `values` for a range query). The points themselves are
        checked where they are converted, in one pass (see `malformed`)."""
        if not isinstance(data, dict):
            raise self.malformed(path, f"data is {_kind(data)}, not an object")
        result = data.get("result")
        if not isinstance(result, list):
            raise self.malformed(path, f"data.result is {_kind(result)}, not a list")
        for series in result:
            if not isinstance(series, dict) or not _is_label_set(series.get("metric")):
                raise self.malformed(path, f'a series is {_kind(series)} without a "metric" object of strings')
            if not isinstance(series.get(points), list):
                raise self.malformed(path, f'a series has {_kind(series.get(points))} as "{points}", not a list')
        return result

    def malformed(self, path: str, what: str) -> PrometheusError:
        """The error for an answer of the wrong shape: valid JSON that no Prometheus API sends."""
        return PrometheusError(f"Prometheus at {self.where} sent an answer of the wrong shape to {path}: {what}; "
                               "is [prometheus] url a Prometheus-compatible API?")

    # ---- transport
    def _call(self, method: str, path: str, params: dict) -> Any:
        attempts = self.config.retries + 1
        for attempt in range(attempts):
            try:
                return self._once(method, path, params)
            except _Transient as exc:
                if attempt + 1 == attempts:
                    raise PrometheusError(f"{exc} (after {attempts} attempt(s))") from None
                self._sleep(min(0.5 * 2**attempt, 30.0))
        raise AssertionError("unreachable")

    def _once(self, method: str, path: str, params: dict) -> Any:
        url = self.config.url + path
        try:
            if method == "GET":
                r = self.session.get(url, params=params, timeout=self.config.timeout_seconds, verify=self._verify)
            else:
                r = self.session.post(url, data=params, timeout=self.config.timeout_seconds, verify=self._verify)
        except requests.exceptions.SSLError as exc:
            raise PrometheusError(f"TLS error talking to Prometheus at {self.where}: {_first(exc)}") from None
        except requests.exceptions.Timeout:
            raise QueryTooBig(
                f"Prometheus at {self.where} did not answer within {self.config.timeout_seconds:g} s"
            ) from None
        except requests.exceptions.ConnectionError as exc:
            raise _Transient(f"cannot reach Prometheus at {self.where}: {_reason(exc)}") from None
        except (requests.exceptions.ChunkedEncodingError, requests.exceptions.ContentDecodingError):
            raise _Transient(f"Prometheus at {self.where} sent an incomplete answer (the connection closed "
                             "before the end of the body)") from None
        except (requests.exceptions.InvalidHeader, UnicodeError, ValueError):  # their text may hold a credential
            raise PrometheusError(f"cannot send a request to Prometheus at {self.where}: a credential or the URL "
                                  "holds characters an HTTP request cannot carry") from None
        return self._decode(r)

    def _decode(self, r: requests.Response) -> Any:
        status = r.status_code
        if status in (401, 403):
            raise PrometheusError(
                f"Prometheus at {self.where} refused the credentials (HTTP {status}); "
                "check [prometheus] username/password or bearer token"
            )
        try:
            body = r.json()
        except (ValueError, json.JSONDecodeError):
            body = None
        if not isinstance(body, dict) or "status" not in body:
            if status in (502, 503, 504):
                raise _Transient(f"Prometheus at {self.where} is unavailable (HTTP {status})")
            kind = r.headers.get("Content-Type", "unknown content").split(";")[0]
            if body is None and kind == "application/json" and status == 200:
                raise PrometheusError(f"Prometheus at {self.where} sent an answer that is not valid JSON (HTTP 200, "
                                      f"{len(r.content):,} bytes; cut short?)")
            raise PrometheusError(
                f"{self.where} does not answer like a Prometheus API (HTTP {status}, {kind}); check [prometheus] url"
            )
        if body["status"] == "success":
            return body.get("data")
        etype, error = body.get("errorType", ""), " ".join(str(body.get("error", "")).split())
        if (etype == "timeout" or "too many samples" in error or "exceeded maximum resolution" in error
                or "context deadline exceeded" in error):  # a timeout hit while expanding series
            raise QueryTooBig(f"Prometheus at {self.where}: {error}")
        if etype == "unavailable" or status in (502, 503, 504):
            raise _Transient(f"Prometheus at {self.where} is unavailable: {error}")
        raise PrometheusError(f"Prometheus at {self.where} rejected a query ({etype or status}): {error}")


class _Transient(Exception):
    """A failure worth retrying after a pause."""


def _kind(value: Any) -> str:
    """What a JSON value is, for a message (never the value itself: it may be long)."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "missing or null"}
    return names.get(type(value), type(value).__name__)


def _is_label_set(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _ts(value: float) -> str:
    return f"{value:.3f}"


def _first(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200]


def _reason(exc: requests.exceptions.ConnectionError) -> str:
    text = str(exc)
    for known in ("Connection refused", "Name or service not known", "No route to host",
                  "Temporary failure in name resolution", "Network is unreachable", "timed out"):
        if known in text:
            return known.lower()
    return "connection failed"
