"""A small Prometheus HTTP API client that tells the ingest *why* a query failed.

prometheus-api-client folds every failure into one exception string; the ingest needs the
API's `errorType` to react (split a chunk on "too many samples" or a timeout, stop on bad
credentials), so this module talks to the API with requests and maps each failure to a
one-line error. Credentials go into the session's headers, never into a message.

How long a request may take: each attempt waits at most `timeout_seconds` to connect and as
long for each pause in the answer; a failure worth retrying (no answer at all, a refused or
dropped connection, HTTP 429/502/503/504 whatever the body) is retried `retries` times after
a pause of 0.5, 1, 2, ... s (at most 30 s), or of the server's `Retry-After` (at most
MAX_RETRY_AFTER). So a server that accepts connections and never answers fails a request after
(retries + 1) x timeout_seconds plus the pauses, with one line.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

import requests

from .config import PrometheusConfig, credentials_in_clear, insecure_http_message
from .errors import ConfigError, YolocostError


class PrometheusError(YolocostError):
    """Prometheus could not be reached or refused a request."""


class QueryTooBig(PrometheusError):
    """The server answered that a query was too large (samples, points) or too slow: split it.
    Only an answer says so; a server that sends nothing at all is `NoAnswer`."""


class NoAnswer(PrometheusError):
    """No answer within timeout_seconds on every attempt: a hung server or proxy, not a big
    query (splitting would only send more requests to it)."""


class PartialResponse(PrometheusError):
    """The server answered with warnings that data may be missing (a shard, replica or store
    node did not answer), and [prometheus] accept_partial_responses is off."""


MAX_RETRY_AFTER = 60.0  # seconds: the longest pause a Retry-After header gets
MAX_WARNINGS = 100  # distinct partial-response warnings kept (each may name a time or a node)


def is_partial_warning(warning: str) -> bool:
    """Whether an answer's warning means its data may be incomplete. A bill must not be made
    of partial data silently, so every warning counts as partial except Prometheus' own PromQL
    annotations ("PromQL info: ...", "PromQL warning: ...", sent under `warnings` by 2.4x and
    under `infos`/`warnings` by 3.x), which remark on how a query was evaluated (e.g. "metric
    might not be a counter") while the data were all read. What stores send when a part of
    them did not answer, e.g. Thanos' "No StoreAPIs matched for this query" or "receive
    series from ...: rpc error ...", Mimir's and VictoriaMetrics cluster's "partial response"
    notes or a "store ... unavailable", and any text not known here, counts as partial."""
    return not " ".join(warning.split()).startswith(("PromQL info", "PromQL warning"))


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
        credentials = config.bearer_token is not None or config.password is not None
        if credentials_in_clear(config.url, credentials) and not config.allow_insecure_http:
            raise ConfigError(f"prometheus: {insecure_http_message(display_url(config.url))}")  # as config check says
        self.config = config
        self.where = display_url(config.url)
        self._sleep = sleep
        # partial-response warnings accepted so far (accept_partial_responses), each text once:
        # the caller says in a warning line that the data are partial (see `partial_note`)
        self.warnings: list[str] = []
        self._warnings_lock = threading.Lock()
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

    def partial_note(self) -> str | None:
        """One line for a `warning:` progress line when partial answers were accepted, else None."""
        if not self.warnings:
            return None
        more = f" and {len(self.warnings) - 1} other warning(s)" if len(self.warnings) > 1 else ""
        return (f"Prometheus at {self.where} answered with a partial response ({_quoted(self.warnings[0])}{more}), "
                "accepted by [prometheus] accept_partial_responses: the data may be incomplete")

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
                if attempt + 1 == attempts and isinstance(exc, _Silent):
                    raise NoAnswer(f"{exc} (after {attempts} attempt(s)); is it overloaded, or behind a proxy "
                                   "that holds requests? A query slower than that needs a larger [prometheus] "
                                   "timeout_seconds") from None
                if attempt + 1 == attempts:
                    raise PrometheusError(f"{exc} (after {attempts} attempt(s))") from None
                pause = min(0.5 * 2**attempt, 30.0) if exc.retry_after is None else exc.retry_after
                self._sleep(pause)
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
        except requests.exceptions.Timeout:  # no answer at all: retried, never split (see NoAnswer)
            raise _Silent(f"Prometheus at {self.where} did not answer within {self.config.timeout_seconds:g} s") \
                from None
        except requests.exceptions.ConnectionError as exc:
            raise _Transient(f"cannot reach Prometheus at {self.where}: {_reason(exc)}") from None
        except (requests.exceptions.ChunkedEncodingError, requests.exceptions.ContentDecodingError):
            raise _Transient(f"Prometheus at {self.where} sent an incomplete answer (the connection closed "
                             "before the end of the body)") from None
        except (requests.exceptions.InvalidHeader, UnicodeError, ValueError):  # their text may hold a credential
            raise PrometheusError(f"cannot send a request to Prometheus at {self.where}: a credential or the URL "
                                  "holds characters an HTTP request cannot carry") from None
        return self._decode(r, path)

    def _decode(self, r: requests.Response, path: str) -> Any:
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
            if status in _BUSY:
                raise self._busy(r)
            kind = r.headers.get("Content-Type", "unknown content").split(";")[0]
            if body is None and kind == "application/json" and status == 200:
                raise PrometheusError(f"Prometheus at {self.where} sent an answer that is not valid JSON (HTTP 200, "
                                      f"{len(r.content):,} bytes; cut short?)")
            raise PrometheusError(
                f"{self.where} does not answer like a Prometheus API (HTTP {status}, {kind}); check [prometheus] url"
            )
        if body["status"] == "success":
            self._check_partial(path, body)
            return body.get("data")
        etype, error = body.get("errorType", ""), " ".join(str(body.get("error", "")).split())
        # Prometheus answers its own query timeout with HTTP 503 and errorType "timeout": the
        # query was too slow, so it is split rather than retried as it is
        if (etype == "timeout" or "too many samples" in error or "exceeded maximum resolution" in error
                or "query timed out" in error
                or "context deadline exceeded" in error):  # a timeout hit while expanding series
            raise QueryTooBig(f"Prometheus at {self.where}: {error}")
        if status in _BUSY:
            raise self._busy(r, error)
        if etype == "unavailable":
            raise _Transient(f"Prometheus at {self.where} is unavailable: {error}")
        raise PrometheusError(f"Prometheus at {self.where} rejected a query ({etype or status}): {error}")

    def _busy(self, r: requests.Response, error: str = "") -> "_Transient":
        """A rate limit (429) or an unavailable server or gateway (502/503/504), whatever its
        body (often a proxy's HTML page): retried after the pause its Retry-After asks for."""
        what = "is rate-limiting requests" if r.status_code == 429 else "is unavailable"
        exc = _Transient(f"Prometheus at {self.where} {what} (HTTP {r.status_code}){': ' + error if error else ''}")
        exc.retry_after = retry_after(r.headers.get("Retry-After"), time.time())
        return exc

    def _check_partial(self, path: str, body: dict) -> None:
        """Stop on an answer that says its data may be incomplete (`is_partial_warning`;
        VictoriaMetrics cluster's `"isPartial": true` too), or, with accept_partial_responses,
        keep its warnings in `self.warnings` for the caller to report."""
        partial = [" ".join(w.split()) for w in _texts(body.get("warnings")) if is_partial_warning(w)]
        if body.get("isPartial") is True:
            partial.append("isPartial: true (not every storage node answered)")
        if not partial:
            return
        if not self.config.accept_partial_responses:
            raise PartialResponse(
                f"Prometheus at {self.where} answered {path} with a partial response: {_quoted(partial[0])}; "
                "a part of the store did not answer, so its data may be incomplete: retry once it is whole, or "
                "set [prometheus] accept_partial_responses = true to bill what it holds")
        with self._warnings_lock:
            for warning in partial:
                if warning not in self.warnings and len(self.warnings) < MAX_WARNINGS:
                    self.warnings.append(warning)


class _Transient(Exception):
    """A failure worth retrying after a pause (the server's Retry-After, when it gave one)."""

    retry_after: float | None = None


class _Silent(_Transient):
    """No answer within the timeout: retried; after the last attempt a NoAnswer."""


_BUSY = (429, 502, 503, 504)  # retried whatever the body says


def retry_after(value: str | None, now: float) -> float | None:
    """The pause a Retry-After header asks for (delay-seconds or an HTTP date), at most
    MAX_RETRY_AFTER; None when absent or unreadable (the usual backoff applies)."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, like every HTTP date
        when = when.replace(tzinfo=dt.timezone.utc)
    return min(max(when.timestamp() - now, 0.0), MAX_RETRY_AFTER)


def _kind(value: Any) -> str:
    """What a JSON value is, for a message (never the value itself: it may be long)."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "missing or null"}
    return names.get(type(value), type(value).__name__)


def _is_label_set(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _ts(value: float) -> str:
    return f"{value:.3f}"


def _texts(warnings: Any) -> list[str]:
    """An answer's `warnings` as strings: a list as the API sends it (a lone string read as one)."""
    if isinstance(warnings, str):
        return [warnings]
    if isinstance(warnings, list):
        return [w if isinstance(w, str) else json.dumps(w) for w in warnings if w is not None]
    return []


def _quoted(text: str) -> str:
    """A server's text in a message: one line, at most 200 characters, in quotes."""
    text = " ".join(text.split())
    return repr(text if len(text) <= 200 else text[:199] + "…")


def _first(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200]


def _reason(exc: requests.exceptions.ConnectionError) -> str:
    text = str(exc)
    for known in ("Connection refused", "Name or service not known", "No route to host",
                  "Temporary failure in name resolution", "Network is unreachable", "timed out"):
        if known in text:
            return known.lower()
    return "connection failed"
