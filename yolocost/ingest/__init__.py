"""The ingest: one time window from Prometheus or VictoriaMetrics into the raw tables.

A package by stage, each module one step of the way:

- `transaction`: `ingest` itself, the fetch in a child process, then one write transaction;
- `fetcher`: every query of a window, in order (`discovery`, the store probe, `pipeline`);
- `discovery`: the window's series, read a chunk at a time;
- `pipeline`: the grain queries of every chunk, pipelined against the server;
- `decoding`: answers as numpy arrays, one key per series and grain step;
- `energy`: the energy counter's deltas, sample by sample or telescoped;
- `rows`: a chunk's points grouped into raw usage rows;
- `spill`: those rows set aside in Parquet files while the fetch runs;
- `staging`: the rows as temp tables shaped like the raw tables;
- `checks`, `jobtimes`, `heap`: checks around the fetch, job times, heap tuning.

The names below are what the rest of yolocost uses.
"""

from .transaction import IngestResult, ingest

__all__ = ["IngestResult", "ingest"]
