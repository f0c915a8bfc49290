"""Jinja environment for reports: the user's template folder first, then the shipped one;
`yolocost/<name>` always names the shipped template, for a user's template to extend.

Autoescaping is always on, so a project or user called `<script>` shows as text.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

import jinja2

from .errors import YolocostError
from .money import Currency
from .resources import shipped_dir


def money(value, currency: Currency = Currency(""), with_code: bool = False) -> str:
    """The `| money` filter: an amount as `currency` shows it (yolocost.money.Currency.format;
    two decimals without one), empty for None (a figure the section does not have)."""
    return "" if value is None else currency.format(value, with_code=with_code)


def number(value, digits: int = 1) -> str:
    return "" if value is None else f"{float(value):,.{digits}f}"


def percent(value, digits: int = 1) -> str:
    return "" if value is None else f"{float(value) * 100:.{digits}f} %"


def cell(value):
    """The `| cell` filter: a table cell the template formatted, as printed in the HTML table
    and in the PDF's listing alike (yolocost.report.listing.listed): None prints empty."""
    return "" if value is None else value


SHIPPED = "yolocost/"  # the prefix that names a shipped template, past any override


def environment(user_dir: Path | None = None, currency: str = "") -> jinja2.Environment:
    """Templates from `user_dir` first, then the shipped ones; `| money` shows amounts as
    `currency` does (yolocost.money.Currency: the decimals of its minor unit).

    `SHIPPED + name` is always the shipped template `name`, whatever `user_dir` holds, so a
    user's template can extend the one it replaces: `{% extends "yolocost/report.html" %}`."""
    shipped = jinja2.FileSystemLoader(str(shipped_dir("templates")))
    loaders: list[jinja2.BaseLoader] = [jinja2.PrefixLoader({SHIPPED.rstrip("/"): shipped})]
    loaders += [jinja2.FileSystemLoader(str(user_dir))] if user_dir else []
    loaders.append(shipped)
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    shown = Currency(currency)  # two decimals without a currency

    def money_filter(value, code: str = "") -> str:
        """`| money`: the amount; `| money(currency)`: with the report's currency code after it.
        A template naming another code would label the amount wrongly: refused."""
        if code and code != shown.code:
            raise ValueError(f"| money({code!r}): this report's amounts are in {shown.code or 'no currency'}")
        return money(value, shown, with_code=bool(code))

    env.filters.update(money=money_filter, number=number, percent=percent, cell=cell)
    return env


@contextlib.contextmanager
def template_errors(user_dir: Path | None = None) -> Iterator[None]:
    """A broken template (most likely a user's override) as one line naming its file and line.

    Jinja's own errors (syntax, undefined names, a missing include) always; any other
    exception raised while rendering (`{{ 1/0 }}`, a bad filter argument) when the innermost
    template it passed through is one of `user_dir`'s: a shipped template failing so is a bug."""
    try:
        yield
    except jinja2.TemplateError as exc:
        where = getattr(exc, "filename", None) or getattr(exc, "name", None)
        line = getattr(exc, "lineno", None)
        if where is None:  # errors while rendering: the innermost template frame says where
            where, line = _template_frame(exc) or (None, None)
        place = f"{where}:{line}" if where and line else where or "a report template"
        message = getattr(exc, "message", None) or str(exc)
        raise YolocostError(f"{place}: {type(exc).__name__}: {message}") from None
    except YolocostError:
        raise
    except Exception as exc:
        frame = _template_frame(exc)
        if user_dir is None or frame is None or not _inside(frame[0], Path(user_dir)):
            raise
        first = (str(exc).splitlines() or [""])[0]
        raise YolocostError(f"{frame[0]}:{frame[1]}: {type(exc).__name__} while rendering: {first}") from None


def _template_frame(exc: BaseException) -> tuple[str, int] | None:
    """(file, line) of the innermost template frame of the traceback (Jinja rewrites its
    frames to the template's file name and line)."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.endswith((".html", ".css", ".js", ".j2")):
            found = (name, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _inside(file: str, folder: Path) -> bool:
    try:
        Path(file).resolve().relative_to(folder.resolve())
        return True
    except (OSError, ValueError):
        return False
