"""The `yolocost` command: a thin click layer over the library.

Each command parses its options, calls one library function and prints what it returns; a
YolocostError becomes `error: <one line>` on stderr with exit status 2 (`errors.py`, the one
place that maps what a command raises). Shared options and parameter types are in
`options.py`, one module per group of commands beside it.
"""

from __future__ import annotations

import click

from .. import __version__
from . import bench, config, data, pipeline, planning, queries, reports, sample
from .errors import Group
from .options import config_option, database_option
from .state import State

__all__ = ["main"]


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@config_option
@database_option
@click.option("-q", "--quiet", is_flag=True, help="No progress messages on stderr.")
@click.option("--debug", is_flag=True, help="Show a traceback for unexpected errors.")
@click.version_option(__version__, prog_name="yolocost")
@click.pass_context
def main(ctx: click.Context, config_path, database, quiet, debug):
    """GPU cost accounting for YOLO training on shared clusters.

    Pulls DCGM GPU metrics and job labels into DuckDB, computes GPU-hours, cost,
    effective compute density, idle waste and cost per mAP point per job, project,
    user, GPU model and image tag.

    \b
    Example:
      yolocost demo                      # the bundled sample month, no Prometheus
      yolocost query top_idle_wasters --param month=2026-10
    """
    ctx.obj = State(config_path, database, quiet, debug)


for _module in (data, planning, reports, queries, pipeline, sample, config, bench):
    for _command in _module.COMMANDS:
        main.add_command(_command)
