"""Jinja environment for reports: the user's template folder first, then the shipped one.

Autoescaping is always on, so a project or user called `<script>` shows as text.
"""

from __future__ import annotations

import contextlib
import decimal
from pathlib import Path
from typing import Iterator

import jinja2

from .errors import YolocostError
from .money import minor_unit
from .resources import shipped_dir


def money(value, currency: str = "", places: int = 2) -> str:
    """Round half-up to the currency's minor unit only for display; the stored figure keeps
    its decimals."""
    if value is None:
        return ""
    amount = decimal.Decimal(str(value)).quantize(decimal.Decimal(1).scaleb(-places), rounding=decimal.ROUND_HALF_UP)
    return f"{amount:,.{places}f}" + (f" {currency}" if currency else "")


def number(value, digits: int = 1) -> str:
    return "" if value is None else f"{float(value):,.{digits}f}"


def percent(value, digits: int = 1) -> str:
    return "" if value is None else f"{float(value) * 100:.{digits}f} %"


def environment(user_dir: Path | None = None, currency: str = "") -> jinja2.Environment:
    """Templates from `user_dir` first, then the shipped ones; `| money` shows amounts with
    the decimals of `currency`'s minor unit."""
    loaders = [jinja2.FileSystemLoader(str(user_dir))] if user_dir else []
    loaders.append(jinja2.FileSystemLoader(str(shipped_dir("templates"))))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    places = minor_unit(currency)  # 2 without a currency
    env.filters.update(money=lambda value, currency="": money(value, currency, places), number=number, percent=percent)
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
