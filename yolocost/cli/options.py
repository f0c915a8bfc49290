"""Options and parameter types that more than one command takes, declared once.

The types raise YolocostError, not click's BadParameter: a bad value is then the one line and
exit status 2 of any bad input, even in a command that otherwise shows click's usage text.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import YolocostError

CALENDAR_MONTH = "Calendar month in the configured time zone."


def config_option(f):
    """The config file (top level)."""
    return click.option("--config", "config_path", metavar="FILE",
                        help="Config file (default: $YOLOCOST_CONFIG, else ./yolocost.toml).")(f)


def database_option(f):
    """The database file, overriding the config's (top level)."""
    return click.option("--db", "database", metavar="FILE", help="DuckDB file, overriding [database] path.")(f)


def month_option(help: str = CALENDAR_MONTH, required: bool = False):
    """`--month YYYY-MM`: the month a command works on; checked by the library, which knows the
    configured time zone."""
    return click.option("--month", required=required, metavar="YYYY-MM", help=help)


def format_option(*choices: str):
    """`-f/--format` of a command that prints its result, `table` by default."""
    return click.option("-f", "--format", "fmt", type=click.Choice(list(choices)), default="table",
                        show_default=True)


queries_dir_option = click.option("--queries-dir", type=click.Path(file_okay=False, exists=True),
                                  help="Extra folder of named queries.")


class _AliasedOption(click.Option):
    """An option that also parses under old spellings, which --help leaves out (one spelling
    shown, scripts written for the old one keep working)."""

    def __init__(self, *args, aliases: tuple[str, ...] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.aliases = aliases

    def get_help_record(self, ctx: click.Context):
        opts = self.opts
        self.opts = [o for o in opts if o not in self.aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = opts


def output_option(help: str, type: click.ParamType | None = None, aliases: tuple[str, ...] = ()):
    """`-o/--output FILE`: the file a command writes its result to instead of the default;
    `aliases` are old spellings that still work."""
    return click.option("-o", "--output", *aliases, "output", cls=_AliasedOption, aliases=aliases, type=type,
                        metavar=None if type is not None else "PATH", help=help)


def refuse_folder(path: str) -> None:
    """`-o` naming a folder: the output writer's one line, given before any work (click's
    own check of the option would print its usage text around it)."""
    if Path(path).is_dir():
        raise YolocostError(f"{path}: is a folder, not a file; give a file path")


def _option_name(param: click.Parameter | None) -> str:
    return max(param.opts, key=len) if param is not None and param.opts else "the value"


class WholeNumber(click.ParamType):
    """A whole number above 0."""

    name = "whole number"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            number = int(value.strip())
        except ValueError:
            number = 0
        if number < 1:
            raise YolocostError(f"{_option_name(param)}: {value!r} is not a whole number above 0")
        return number


class Label(click.ParamType):
    """A label value: any text but an empty one (an empty label would match nothing)."""

    name = "label"

    def convert(self, value, param, ctx):
        if not value.strip():
            raise YolocostError(f"{_option_name(param)}: empty (leave the option out instead)")
        return value


class Amount(click.ParamType):
    """An amount of money above 0 (`250`, `99.50`), kept with the spelling given (estimate.CostLimit)."""

    name = "amount"

    def convert(self, value, param, ctx):
        from ..estimate import CostLimit

        return value if isinstance(value, CostLimit) else CostLimit.parse(value, _option_name(param))


class NameValue(click.ParamType):
    """`NAME=VALUE` as a (name, value) pair; the name is stripped, the value kept as given."""

    name = "name=value"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        name, sep, text = value.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{value!r} is not NAME=VALUE", ctx=ctx, param_hint=_option_name(param))
        return name.strip(), text
