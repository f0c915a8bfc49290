"""What every command gets from the top-level options: the config, loaded when first used, and
the progress log."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from .streams import to_stderr


@dataclass
class State:
    config_path: str | None
    database: str | None
    quiet: bool
    debug: bool
    _config: object = None

    @property
    def config(self):
        """The loaded config (lazily: `--help` and `demo` need none), with --db applied."""
        if self._config is None:
            from ..config import load_config

            config = load_config(self.config_path)
            self._config = config.with_database(Path(self.database)) if self.database else config
        return self._config

    def log(self, message: str) -> None:
        if not self.quiet:
            to_stderr(f"yolocost: {message}")


pass_state = click.make_pass_decorator(State)


def require_database(config) -> None:
    """Commands that read stored data refuse a database file that does not exist, rather
    than creating an empty one (`--db typo.duckdb build`)."""
    from ..db import require_database as require

    require(config.database)
