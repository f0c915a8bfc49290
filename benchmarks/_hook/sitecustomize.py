"""Counting hook for path (a) of the ingest benchmark, active only when YOLOCOST_BENCH_COUNTS is set.

`benchmarks/ingest_bench.py` runs the real `yolocost` console script with this folder on
PYTHONPATH. Python imports `sitecustomize` at start-up; this one wraps a few functions of
yolocost.ingest to count what the ingest fetched (answers, series, points per grain query),
fingerprint the requests it sent for them, and to time its stages, and writes both as JSON at exit. The wrappers add a counter and
two clock reads per call: nothing measurable next to the ingest itself.
"""

import os

_path = os.environ.get("YOLOCOST_BENCH_COUNTS")
if _path:
    import atexit
    import json
    import time

    _t0 = time.monotonic()
    _counts: dict = {}
    _stages: dict = {}
    _hwm: dict = {}  # peak RSS (VmHWM, MiB) of the process when a stage ended
    _rss: dict = {}  # RSS (VmRSS, MiB) when a stage ended

    def _vmhwm(field: str = "VmHWM:") -> float:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
        return 0.0

    def _timed(owner, name, label, hwm=True):
        orig = getattr(owner, name)

        def wrapper(*args, **kwargs):
            t = time.monotonic()
            try:
                return orig(*args, **kwargs)
            finally:
                _stages[label] = _stages.get(label, 0.0) + time.monotonic() - t
                if hwm:
                    _hwm[label] = round(_vmhwm(), 1)
                    _rss[label] = round(_vmhwm("VmRSS:"), 1)

        setattr(owner, name, wrapper)

    from yolocost.ingest import decoding as _decoding, energy as _energy, fetcher as _fetcher, \
        staging as _staging, transaction as _transaction
    from yolocost.promclient import PrometheusClient as _PrometheusClient

    _keep_chunk = _decoding.Points.keep_chunk

    def _counting_keep_chunk(self, parts):
        for name, (key, _) in parts:
            c = _counts.setdefault(name, {"answers": 0, "series": 0, "points": 0})
            c["answers"] += 1
            c["series"] += len(set((key // self.steps).tolist()))
            c["points"] += len(key)
        return _keep_chunk(self, parts)

    _decoding.Points.keep_chunk = _counting_keep_chunk

    import hashlib
    import threading

    # fingerprints of the requests sent while fetching grain points (as benchmarks/floor.py
    # computes them), so the floor can be checked to send exactly these
    _requests: list = []
    _recording = threading.Event()
    _client = _PrometheusClient
    _query, _query_range = _client.query, _client.query_range
    from yolocost.promclient import _ts

    def _note(path, params):
        if _recording.is_set():
            _requests.append(hashlib.sha256(json.dumps([path, params], sort_keys=True).encode()).hexdigest()[:16])

    def _recording_query(self, promql, at):
        _note("/api/v1/query", {"query": promql, "time": _ts(at)})
        return _query(self, promql, at)

    def _recording_query_range(self, promql, start, end, step):
        _note("/api/v1/query_range", {"query": promql, "start": _ts(start), "end": _ts(end), "step": _ts(step)})
        return _query_range(self, promql, start, end, step)

    _client.query, _client.query_range = _recording_query, _recording_query_range
    _grain_points = _fetcher.Fetcher._grain_points

    def _recording_grain_points(self, *args, **kwargs):
        _recording.set()
        try:
            return _grain_points(self, *args, **kwargs)
        finally:
            _recording.clear()

    _fetcher.Fetcher._grain_points = _recording_grain_points
    _timed(_fetcher.Fetcher, "run", "fetch_total_s")
    _timed(_fetcher.Fetcher, "_grain_points", "grain_queries_s")
    _timed(_decoding.Points, "arrays", "json_to_arrays_s", hwm=False)
    if hasattr(_energy, "energy_points"):  # the raw energy samples differenced client-side
        _timed(_energy, "energy_points", "energy_samples_to_arrays_s", hwm=False)
    _timed(_decoding.Points, "keep_chunk", "align_s", hwm=False)
    _timed(_fetcher.Fetcher, "_usage", "assemble_group_s")
    _timed(_fetcher.Fetcher, "_training", "training_s")
    _timed(_transaction, "rebuild", "rebuild_models_s")
    _timed(_transaction, "replace_window", "replace_window_s")
    _timed(_staging, "stage_usage", "stage_usage_s")
    _timed(_staging, "stage", "stage_s")
    _timed(_PrometheusClient, "_decode", "json_decode_s", hwm=False)  # summed over the worker threads

    _imports = time.monotonic() - _t0
    _hwm["after_imports"] = round(_vmhwm(), 1)

    def _dump(path=_path):
        with open(path, "w") as fh:
            json.dump({"counts": _counts, "stages": _stages, "hook_import_s": _imports, "peak_rss_after_mib": _hwm, "rss_after_mib": _rss,
                       "request_fingerprints": sorted(_requests),
                       "process_s": time.monotonic() - _t0}, fh)

    atexit.register(_dump)
    if hasattr(_fetcher, "fetch"):  # the fetch runs in a forked child, which leaves without atexit:
        # it writes its own counts beside the parent's (read together by ingest_bench.read_hook)
        _fetch = _fetcher.fetch

        def _fetch_and_dump(*args, **kwargs):
            try:
                return _fetch(*args, **kwargs)
            finally:
                _dump(_path + ".fetch")

        _fetcher.fetch = _fetch_and_dump
