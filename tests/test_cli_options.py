"""The options several commands share (`yolocost/cli/options.py`): one spelling of the output
flag, `-o/--output`, with `export finance`'s earlier `--out` still accepted but not shown, and
parameter types whose bad values are the one line and exit status 2 of any bad input."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from helpers.builders import EUR_CONFIG, assert_one_line_error, job_row, usage_row, write_raw, yolocost
from click.testing import CliRunner

from yolocost.cli import main
from yolocost.cli.options import Amount, Label, NameValue, WholeNumber
from yolocost.errors import YolocostError
from yolocost.estimate import CostLimit

CONFIG = EUR_CONFIG
T0 = "2026-03-02T00:00Z"


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    """A folder with a config and a database holding two jobs of one 5-minute interval."""
    folder = tmp_path_factory.mktemp("lab")
    (folder / "yolocost.toml").write_text(CONFIG)
    write_raw(folder / "raw", [usage_row(T0, "g1", "ja"), usage_row(T0, "g2", "jb")],
              [job_row("ja", project="p-a"), job_row("jb", project="p-b")])
    assert yolocost("load", "raw", cwd=folder).returncode == 0
    return folder


def test_export_finance_writes_the_same_csv_under_every_spelling_of_the_output_flag(lab):
    written = {}
    for flag in ("-o", "--output", "--out"):
        done = yolocost("export", "finance", "--month", "2026-03", flag, f"finance{flag}.csv", cwd=lab)
        assert done.returncode == 0, done.stderr
        assert f"finance{flag}.csv" in done.stdout
        written[flag] = (lab / f"finance{flag}.csv").read_bytes()
    assert written["-o"].startswith(b"BilledCost,")
    assert written["-o"] == written["--output"] == written["--out"]


def test_the_old_spelling_is_refused_as_the_new_one_is(lab):
    for flag in ("--output", "--out"):
        assert_one_line_error(yolocost("export", "finance", "--month", "2026-03", flag, ".", cwd=lab),
                              ".: is a folder, not a file; give a file path")


@pytest.mark.parametrize("argv", [["export", "finance"], ["query"]])
def test_help_shows_one_spelling_of_the_output_flag(argv):
    # in-process (CliRunner), not the cli fixture: it sets the terminal width the help is laid out for
    shown = CliRunner().invoke(main, [*argv, "--help"], terminal_width=100)
    assert shown.exit_code == 0, shown.output
    assert "-o, --output PATH" in shown.output
    assert "--out " not in shown.output


def _option(type_: click.ParamType, name: str = "--gpus") -> click.Option:
    return click.Option([name], type=type_)


@pytest.mark.parametrize("text, number", [("1", 1), (" 12 ", 12)])
def test_a_whole_number_above_0(text, number):
    assert WholeNumber().convert(text, _option(WholeNumber()), None) == number


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5", ""])
def test_anything_else_is_one_line_naming_the_option(text):
    with pytest.raises(YolocostError, match=r"^--gpus: .* is not a whole number above 0$"):
        WholeNumber().convert(text, _option(WholeNumber()), None)


def test_a_label_may_not_be_empty():
    option = _option(Label(), "--project")
    assert Label().convert(" vision ", option, None) == " vision "
    with pytest.raises(YolocostError, match=r"^--project: empty \(leave the option out instead\)$"):
        Label().convert("  ", option, None)


def test_an_amount_keeps_its_spelling():
    limit = Amount().convert(" 99.50", _option(Amount(), "--max-cost"), None)
    assert limit == CostLimit(" 99.50", CostLimit.parse("99.5").amount)
    with pytest.raises(YolocostError, match=r"^--max-cost: 'ten' is not an amount above 0"):
        Amount().convert("ten", _option(Amount(), "--max-cost"), None)


def test_name_value_pairs_split_at_the_first_equals_sign():
    option = click.Option(["-p", "--param"], type=NameValue(), multiple=True)
    assert NameValue().convert(" month =2026-10=x", option, None) == ("month", "2026-10=x")
    with pytest.raises(click.BadParameter, match="'month' is not NAME=VALUE"):
        NameValue().convert("month", option, None)
