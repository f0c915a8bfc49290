"""Run the FinOps Foundation's focus-validator on a finance CSV and judge what it says.

The validator (PyPI `focus-validator`, pinned in the Makefile) needs Python 3.12, so it lives in
a venv of its own (`make focus-validator` makes .venv-focus; FOCUS_VALIDATOR_VENV names
another) and runs here as a subprocess: its CLI with `--output-type unittest`, a JUnit XML
file of one test case per rule (passed, failed, skipped or errored). It validates FOCUS 1.2,
the rule model it ships (`--block-download`: nothing is fetched); which rules it runs depends
on the applicability criteria it is given.

docs/focus-validator.md is the one list of what the harness assumes: the applicability
criteria the finance CSV has (table "Applicability criteria": the ones marked `yes` are
passed) and the rules that fail by a defect of the validator, not of the CSV (table
"Validator defects"). A failed rule is excused when it is listed there, or when it is a
composite rule that holds when all its rules hold (an AND) and whose failing rules are all
excused. Every other failure is the CSV's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "focus-validator.md"
VERSION = "2.2.1"  # the Makefile's FOCUS_VALIDATOR_VERSION
FOCUS_VERSION = "1.2"
TIMEOUT = 300  # seconds for one validator run (about 4 s on the demo month)

# the validator logs DEBUG to ./focus_validator_detailed.log unless LOGGING_CONFIG names another setup
_LOGGING = """\
version: 1
disable_existing_loggers: false
handlers:
  stderr: {class: logging.StreamHandler, stream: "ext://sys.stderr", level: ERROR}
root: {level: ERROR, handlers: [stderr]}
"""


class ValidatorMissing(Exception):
    """The validator's venv is not there, or holds another version."""


def venv() -> Path:
    return Path(os.environ.get("FOCUS_VALIDATOR_VENV") or REPO / ".venv-focus")


def package_dir() -> Path:
    """The installed focus_validator package (its rules/ folder holds the rule model)."""
    found = sorted(venv().glob("lib/python3*/site-packages/focus_validator"))
    if not found:
        raise ValidatorMissing(f"no focus_validator package under {venv()}")
    return found[-1]


def check_installed() -> None:
    """ValidatorMissing, saying what to run, unless the venv holds focus-validator VERSION."""
    cli = venv() / "bin" / "focus-validator"
    if not cli.exists():
        raise ValidatorMissing(f"{cli} not found: run `make focus-validator` (a Python 3.12 venv with "
                               f"focus-validator {VERSION}; FOCUS_VALIDATOR_VENV names another venv)")
    versions = [p.name for p in package_dir().parent.glob("focus_validator-*.dist-info")]
    if versions != [f"focus_validator-{VERSION}.dist-info"]:
        raise ValidatorMissing(f"{venv()} holds {versions or 'no focus-validator'}, not focus-validator "
                               f"{VERSION}: run `make focus-validator`")


def fail_without_validator() -> None:
    """Fail (never skip: CI must not pass by skipping) when the validator is not installed."""
    try:
        check_installed()
    except ValidatorMissing as missing:
        import pytest

        pytest.fail(str(missing), pytrace=False)


# --------------------------------------------------------------------------- the rule model


@lru_cache(maxsize=None)
def rule_model() -> dict:
    """The FOCUS 1.2 rule model the validator ships (model-1.2.*.json; the validator picks the
    highest version of it, and so does this)."""
    files = list((package_dir() / "rules").glob(f"model-{FOCUS_VERSION}*.json"))
    if not files:
        raise ValidatorMissing(f"no model-{FOCUS_VERSION}*.json in {package_dir() / 'rules'}")
    version = lambda p: tuple(int(x) for x in p.name[len("model-"):-len(".json")].split("."))  # noqa: E731
    return json.loads(max(files, key=version).read_text(encoding="utf-8"))


def rule(rule_id: str) -> dict:
    return rule_model()["ModelRules"][rule_id]


def children(rule_id: str) -> list[str]:
    """The rules a composite rule combines (its CheckModelRule items, nested AND/OR included)."""
    found: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("CheckFunction") == "CheckModelRule" and "ModelRuleId" in node:
                found.append(node["ModelRuleId"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(rule(rule_id)["ValidationCriteria"].get("Requirement", {}))
    return found


def rules_gated_by(criterion: str) -> list[str]:
    return [rid for rid, r in rule_model()["ModelRules"].items() if criterion in (r.get("ApplicabilityCriteria") or [])]


def describe(rule_id: str) -> str:
    if rule_id not in rule_model()["ModelRules"]:
        return f"{rule_id}: (not in the rule model)"
    r = rule(rule_id)
    return f"{rule_id} ({r['ValidationCriteria'].get('Keyword', '?')}): {r['ValidationCriteria']['MustSatisfy']}"


# --------------------------------------------------------------------------- the doc


def doc_table(heading: str, doc: Path = DOC) -> list[list[str]]:
    """The rows (cells, backticks stripped) of the first Markdown table under `## heading`."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    try:
        start = lines.index(f"## {heading}")
    except ValueError:
        raise AssertionError(f"{doc} has no section '## {heading}'") from None
    rows: list[list[str]] = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if set("".join(cells)) <= set("-: "):
            continue  # the separator row
        rows.append([c.replace("`", "") for c in cells])
    if len(rows) < 2:
        raise AssertionError(f"{doc}: no table under '## {heading}'")
    return rows[1:]  # without the header row


def criteria_table() -> dict[str, bool]:
    """{criterion: passed?} from the doc's "Applicability criteria" table."""
    table = {}
    for cells in doc_table("Applicability criteria"):
        if cells[1].lower() not in ("yes", "no"):
            raise AssertionError(f"{DOC}: criterion {cells[0]} is neither yes nor no: {cells[1]!r}")
        table[cells[0]] = cells[1].lower() == "yes"
    return table


def applicability_criteria() -> list[str]:
    return sorted(c for c, passed in criteria_table().items() if passed)


ZERO_DECIMAL_DEFECTS = "Validator defects in a currency without minor units"


def defect_rules(minor_units: int = 2) -> dict[str, str]:
    """{rule id: why it is the validator's defect} from the doc's "Validator defects" table, and
    for a currency without minor units (costs in whole units) its table of those too."""
    found = {cells[0]: cells[1] for cells in doc_table("Validator defects")}
    if minor_units == 0:
        found.update({cells[0]: cells[1] for cells in doc_table(ZERO_DECIMAL_DEFECTS)})
    return found


# --------------------------------------------------------------------------- running it


@dataclass
class Verdict:
    """What the validator said about one CSV (`status`: rule id -> passed | failed | skipped |
    errored; errored is a rule whose SQL could not run, e.g. on a missing column) and how the
    failures split into excused (validator defects) and the CSV's own."""

    csv: Path
    criteria: list[str]
    status: dict[str, str]
    workdir: Path
    excused: list[str] = field(default_factory=list)
    real: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        return sorted(r for r, s in self.status.items() if s in ("failed", "errored"))

    def count(self, status: str) -> int:
        return sum(1 for s in self.status.values() if s == status)


def _command(csv: Path, criteria: list[str], output: list[str]) -> list[str]:
    return [str(venv() / "bin" / "focus-validator"), "--data-file", str(csv), "--validate-version", FOCUS_VERSION,
            "--block-download", "--applicability-criteria", ",".join(criteria), *output]


def _run(command: list[str], workdir: Path) -> subprocess.CompletedProcess:
    # it reads focus_validator/rules/currency_codes.csv relative to its working directory
    rules = workdir / "focus_validator" / "rules"
    if not (rules / "currency_codes.csv").exists():
        rules.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package_dir() / "rules" / "currency_codes.csv", rules / "currency_codes.csv")
    logging = workdir / "logging.yaml"
    logging.write_text(_LOGGING, encoding="utf-8")
    env = {**os.environ, "LOGGING_CONFIG": str(logging), "PYTHONIOENCODING": "utf-8"}
    for name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(name, None)
    return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def validate(csv: Path, workdir: Path, criteria: list[str] | None = None, minor_units: int = 2) -> Verdict:
    """Run the validator on `csv` (in `workdir`) with the doc's applicability criteria and
    split its failures (see the module doc); `minor_units` is the decimals of the CSV's
    currency (0: the defects of whole-unit costs are excused too)."""
    check_installed()
    criteria = applicability_criteria() if criteria is None else criteria
    workdir.mkdir(parents=True, exist_ok=True)
    report = workdir / "focus-validator.xml"
    report.unlink(missing_ok=True)
    proc = _run(_command(csv, criteria, ["--output-type", "unittest", "--output-destination", str(report)]), workdir)
    if proc.returncode != 0 or not report.exists():
        raise AssertionError(f"focus-validator exited {proc.returncode} on {csv} without a report:\n"
                             f"{(proc.stderr or proc.stdout)[-4000:]}")
    verdict = Verdict(Path(csv), criteria, parse_junit(report), workdir)
    excused_ids = set(defect_rules(minor_units))
    failed = set(verdict.failed)

    def excused(rule_id: str, seen: frozenset = frozenset()) -> bool:
        if rule_id in excused_ids:
            return True
        model = rule_model()["ModelRules"].get(rule_id, {})
        if (rule_id in seen or model.get("Function") != "Composite"
                or model.get("ValidationCriteria", {}).get("Requirement", {}).get("CheckFunction") != "AND"):
            return False  # an OR composite fails only when all its branches do: never excused by them
        failing = [c for c in children(rule_id) if c in failed]
        return bool(failing) and all(excused(c, seen | {rule_id}) for c in failing)

    verdict.excused = [r for r in verdict.failed if excused(r)]
    verdict.real = [r for r in verdict.failed if not excused(r)]
    return verdict


def parse_junit(path: Path) -> dict[str, str]:
    """{rule id: passed | failed | skipped | errored} from the validator's JUnit XML."""
    status = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        rule_id = case.get("name", "").split(" :: ")[0].strip()
        outcome = "passed"
        for child, name in (("failure", "failed"), ("error", "errored"), ("skipped", "skipped")):
            if case.find(child) is not None:
                outcome = name
        status[rule_id] = outcome
    if not status:
        raise AssertionError(f"{path} holds no test case")
    return status


def explain_failures(verdict: Verdict, rule_ids: list[str]) -> str:
    """The validator's own words on `rule_ids` (its console output, with up to two sample
    rows each), from a second run: only called when something failed."""
    proc = _run(_command(verdict.csv, verdict.criteria, ["--output-type", "console", "--show-violations"]),
                verdict.workdir)
    wanted = set(rule_ids)
    out, keep = [], False
    lines = proc.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("--- Failures ---")), len(lines))
    for line in lines[start + 1:]:
        if line.startswith("- "):
            keep = line[2:].split(":", 1)[0] in wanted
        if keep:
            out.append(line)
    return "\n".join(out)


def assert_conforms(verdict: Verdict, explain: bool = True) -> None:
    """AssertionError listing every failure that is the CSV's (rule, its FOCUS text and, with
    `explain`, the validator's message and sample rows from a second run)."""
    if not verdict.real:
        return
    listed = "\n".join(f"  {describe(r)}" for r in verdict.real)
    words = f"\nThe validator's words:\n{explain_failures(verdict, verdict.real)}" if explain else ""
    raise AssertionError(
        f"focus-validator {VERSION} (FOCUS {FOCUS_VERSION}, criteria {','.join(verdict.criteria)}) finds "
        f"{len(verdict.real)} failed rule(s) in {verdict.csv.name} that docs/focus-validator.md does not list "
        f"as validator defects:\n{listed}\n"
        f"({len(verdict.excused)} more failed rule(s) are listed validator defects or AND composites of them)"
        f"{words}")
