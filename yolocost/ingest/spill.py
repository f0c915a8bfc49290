"""Spill files: the window's usage rows set aside a chunk at a time while the fetch runs.

Each chunk's rows go to a Parquet file in a scratch folder beside the database, so the
fetch holds a few chunks in memory whatever the window's length; the write then reads
the files as one view.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import duckdb
import numpy as np

from .. import db
from ..config import Config
from ..errors import YolocostError
from ..sqltext import literal
from . import staging
from .rows import Columns


class Spill:
    """The window's usage rows, a chunk at a time, as Parquet files in a scratch folder beside
    the database (removed at the end; one left by a killed ingest goes at the next): the fetch
    holds a few chunks' rows in memory whatever the window's length. Counts, as the rows go
    by, what the checks after the fetch need: GPU-intervals, the most seconds of one, and the
    rows of the GPUs the store probe counted raw samples on (`probed`)."""

    def __init__(self, config: Config):
        self.config = config
        self.files: list[tuple[int, Path]] = []  # (first interval, file)
        self.gpu_intervals, self.most_seconds = 0, 0.0
        self.probed: set[str] = set()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._probed_rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def __enter__(self) -> "Spill":
        database = Path(self.config.database)
        prefix = f".{database.name}.ingest-"
        try:
            database.parent.mkdir(parents=True, exist_ok=True)
            for stale in database.parent.glob(prefix + "*"):  # the database's lock is held: no ingest runs
                shutil.rmtree(stale, ignore_errors=True)
            self.folder = Path(tempfile.mkdtemp(prefix=prefix, dir=database.parent))
        except OSError as exc:
            raise YolocostError(f"{database.parent}: cannot make a scratch folder for the ingest there: "
                                f"{exc.strerror}") from None
        return self

    def __exit__(self, *exc) -> None:
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The scratch connection that writes the files, opened by the first chunk: in the
        process that fetches (a child's DuckDB is not the parent's)."""
        if self._con is None:
            # a chunk's rows (some 300,000 at 1,000 GPUs a day) take a few dozen MB in DuckDB
            self._con = duckdb.connect(config={**db.NO_EXTENSION_DOWNLOADS, "memory_limit": "128MB", "threads": 1})
            self._con.execute("SET TimeZone = 'UTC'")
            db.create_schema(self._con)
        return self._con

    def close(self) -> None:
        """Close the scratch connection, so its memory goes back."""
        if self._con is not None:
            self._con.close()
            self._con = None

    def add(self, rows: Columns) -> None:
        """One chunk's grouped rows (`rows.grouped`), written to their own file."""
        if not len(rows["samples"]):
            return
        _, gpu_interval = np.unique(rows["gpu_interval"], return_inverse=True)
        seconds = np.bincount(gpu_interval, rows["seconds_us"]) / 1e6
        self.gpu_intervals += len(seconds)
        self.most_seconds = max(self.most_seconds, float(seconds.max()))
        if self.probed:
            uuid = rows["gpu_uuid"]
            mine = np.array([False, *(v in self.probed for v in uuid.values)])[uuid.codes]
            if mine.any():
                self._probed_rows.append((np.array(list(uuid[mine]), object), rows["interval_start"][mine],
                                          rows["samples"][mine]))
        staging.stage_usage(self.con, self.config, rows)
        path = self.folder / f"{len(self.files)}.parquet"
        self.con.execute(f"COPY incoming_gpu_usage TO {literal(str(path))} (FORMAT parquet)")
        self.con.execute("DROP TABLE incoming_gpu_usage")
        self.files.append((int(rows["interval_start"].min()), path))

    def probed_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(gpu_uuid, interval_start, samples) of the rows of the probed GPUs."""
        parts = self._probed_rows or [(np.zeros(0, object), np.zeros(0, np.int64), np.zeros(0))]
        gpu_uuid, interval_start, samples = (np.concatenate(column) for column in zip(*parts))
        return gpu_uuid, interval_start, samples

    def stage(self, con: duckdb.DuckDBPyConnection) -> int:
        """`incoming_gpu_usage` of `con`: a view of the files, in the raw table's order (chunks
        in time order, each file in order; DuckDB keeps a scan's order). A view, not a table:
        the checks and the insert stream the rows from the files, so a month of a large fleet
        never sits in memory whole. Returns its row count."""
        self.close()  # the scratch connection's memory goes back before the write needs its own
        files = [literal(str(path)) for _, path in sorted(self.files)]
        source = f"read_parquet([{', '.join(files)}])" if files else "(SELECT * FROM gpu_usage LIMIT 0)"
        types = con.execute("SELECT column_name, column_type FROM (DESCRIBE gpu_usage)").fetchall()
        select = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in types)
        con.execute(f"CREATE OR REPLACE TEMP VIEW incoming_gpu_usage AS SELECT {select} FROM {source}")
        return db.one_row(con.execute("SELECT count(*) FROM incoming_gpu_usage"))[0]
