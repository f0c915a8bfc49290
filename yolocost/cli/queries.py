"""Commands for the named queries and SQL: query (run one) and queries (list them)."""

from __future__ import annotations

from pathlib import Path

import click

from .options import NameValue, format_option, output_option, queries_dir_option, refuse_folder
from .state import State, pass_state, require_database
from .streams import to_stderr, write_stdout


class _QueryCommand(click.Command):
    """`yolocost query "-- note ..."`: an argument that starts with a SQL comment is
    the query, not an option (no option starts with `--` and a space)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" not in args:
            sql = [a for a in args if _starts_with_comment(a)]
            args = [a for a in args if not _starts_with_comment(a)] + (["--"] + sql if sql else [])
        return super().parse_args(ctx, args)


def _starts_with_comment(arg: str) -> bool:
    return arg.startswith("--") and (len(arg) == 2 or arg[2].isspace()) and arg != "--"


@click.command(cls=_QueryCommand)
@click.argument("target")
@click.option("-p", "--param", "params", multiple=True, type=NameValue(), metavar="NAME=VALUE",
              help="A query parameter (repeatable).")
@format_option("table", "csv", "json")
@output_option(type=click.Path(),
               help="Write the result to this file instead of stdout (replaced atomically; a symlink is written "
                    "through, a device such as /dev/stdout written in place).")
@click.option("--write", is_flag=True, help="Open the database read-write (default: read-only).")
@queries_dir_option
@pass_state
def query(state: State, target, params, fmt, output, write, queries_dir):
    """Run a named query from queries/, a .sql file, or a SQL string.

    The database is opened read-only unless --write is given, and the query runs under the
    configured [database] memory_limit (a read-only query cannot SET another). Parameters declared in a query's header
    (`-- param: month VARCHAR: ...`) are bound with --param NAME=VALUE. Timestamps are shown
    in the configured time zone, where the marts cut months and days. A reader that leaves
    early (`| head`) ends the command with one line and status 2: the output is not complete.

    \b
    Examples:
      yolocost query top_idle_wasters --param month=2026-10
      yolocost query my_report.sql -f csv -o out.csv
      yolocost query "SELECT project, cost FROM mart_project_month WHERE month = '2026-10'"
    """
    from .. import queries
    from ..tables import FORMATTERS

    if output:
        refuse_folder(output)
    q = queries.resolve(target, Path(queries_dir) if queries_dir else None)
    require_database(state.config)
    columns, rows = queries.run(state.config.database, q, dict(params), write=write,
                                timezone=state.config.timezone, memory_limit=state.config.memory_limit,
                                config=state.config)
    text = FORMATTERS[fmt](columns, rows)
    if output:
        from ..outputs import write_output

        write_output(output, text if text.endswith("\n") else text + "\n")
        state.log(f"wrote {len(rows)} rows to {output}")
    else:
        write_stdout(text if text.endswith("\n") else text + "\n")


@click.command(name="queries")
@queries_dir_option
def list_queries(queries_dir):
    """List the named queries with their titles and parameters.

    A query file that cannot be read (not UTF-8, a bad header) is skipped with a warning
    naming it; the others are listed and run as usual.

    \b
    Example:
      yolocost queries
    """
    from .. import queries

    found, unreadable = queries.scan(Path(queries_dir) if queries_dir else None)
    for problem in unreadable.values():
        to_stderr(f"warning: {problem} (skipped)")
    for q in found:
        params = " ".join(f"{p.name}" + (f"={p.default}" if p.default is not None else "") for p in q.params)
        click.echo(f"{q.name:32} {q.title}" + (f"  [{params}]" if params else ""))


COMMANDS = (query, list_queries)
