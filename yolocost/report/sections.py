"""The report's sections, each defined once: its id and title, the function that reads its
data, the functions that draw its charts, the audiences it is shown to, and its template.

SECTIONS, in page order, is what the rest follows: `collect` reads the sections of one
audience, `figures` draws their charts, and the pages list and include them in this order
(report.html: `sections`, from `shown_to`). Adding a section is one entry here, its reader
(data.py or a module of its own), its chart (charts.py) if it has one, and its template
reports/templates/sections/<id>.html.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping
from zoneinfo import ZoneInfo

from ..money import Currency
from . import charts, data, gpufit, ratecard, waste
from .actions import actions, policy_notes
from .jobs import job_table
from .tags import image_tag_comparison
from .trend import trend

if TYPE_CHECKING:
    import plotly.graph_objects as go

ADMIN, PROJECT = "admin", "project"  # the audiences: the department admins, or one project
EVERYONE = frozenset({ADMIN, PROJECT})


def audience_of(project: str | None) -> str:
    """The audience of a report for `project` (None: the admin report, every project)."""
    return ADMIN if project is None else PROJECT


@dataclass
class Reading:
    """What a section's reader is given: the open read-only connection, the month, the
    audience's project (None: the admin report), the settings its figures depend on, and the
    sections read so far (`report`: a section read last reads the others)."""

    con: Any
    month: str
    project: str | None
    timezone: str
    grain_seconds: int
    currency: str  # the currency's code
    report: dict[str, Any] = field(default_factory=dict)
    tz: ZoneInfo = field(init=False)
    shown: Currency = field(init=False)  # how the currency's amounts are shown

    def __post_init__(self) -> None:
        self.tz, self.shown = ZoneInfo(self.timezone), Currency(self.currency)


@dataclass(frozen=True)
class Drawing:
    """What a chart is drawn with besides its section's data."""

    currency: str
    admin: bool
    colors: dict[str, str] | None  # one colour per project in every chart of the admin report


Reader = Callable[[Reading], Any]
Drawer = Callable[[Any, Drawing], "go.Figure | None"]  # the section's data -> a figure, or None without data


@dataclass(frozen=True)
class Section:
    """One section of the report."""

    id: str
    title: str
    read: Reader  # its data, `report[id]`
    charts: Mapping[str, Drawer] = field(default_factory=dict)  # chart name -> its figure from `report[id]`
    audiences: frozenset[str] = EVERYONE
    also: Mapping[str, Reader] = field(default_factory=dict)  # more data its template shows, `report[name]`
    last: bool = False  # read after every other section, from them

    @property
    def template(self) -> str:
        return f"sections/{self.id}.html"


def _leaderboard(r: Reading) -> list[dict]:
    """The value leaderboard, each row with `tag_ok`: a configuration on an image tag the tag
    policy rejects is never recommended (actions._value)."""
    board = data.leaderboard(r.con, r.month, r.project, r.timezone, r.grain_seconds)
    rejected = data.rejected_tags(r.con, r.month)
    for row in board:
        row["tag_ok"] = row["image_tag"] not in rejected
    return board


def _project_jobs(r: Reading) -> dict:
    assert r.project is not None  # shown to a project's audience only
    return job_table(r.con, r.month, r.project, r.timezone, r.currency)


SECTIONS: tuple[Section, ...] = (
    Section("headline", "Headline", lambda r: data.headline(r.con, r.month, r.project, r.shown)),
    Section("actions", "What to do", lambda r: actions(r.report, r.project, r.shown), last=True,
            also={"policy_notes": lambda r: policy_notes(r.report, r.shown)}),
    Section("trend", "Trend", lambda r: trend(r.con, r.month, r.project),
            charts={"trend": lambda d, c: charts.trend(d, c.currency)}),
    Section("daily", "Cost per day", lambda r: data.daily(r.con, r.month, r.project),
            charts={"daily": lambda d, c: charts.daily(d, c.currency, c.colors)}),
    Section("projects", "Cost by project", lambda r: data.projects(r.con, r.month),
            charts={"projects": lambda d, c: charts.projects(d, c.currency)}, audiences=frozenset({ADMIN})),
    Section("users", "Cost by user", lambda r: data.users(r.con, r.month, r.project),
            charts={"users": lambda d, c: charts.users(d, c.currency, c.colors)}),
    Section("gpu_models", "Cost by GPU model", lambda r: data.gpu_models(r.con, r.month, r.project),
            charts={"gpu_models": lambda d, c: charts.gpu_models(d, c.currency, c.admin)}),
    Section("image_tags", "Cost by image tag", lambda r: data.image_tags(r.con, r.month, r.project),
            charts={"image_tags": lambda d, c: charts.image_tags(d, c.currency)}),
    Section("density", "Density of jobs", lambda r: data.density(r.con, r.month, r.project),
            charts={"density": lambda d, c: charts.density(d)}),
    Section("idle_waste", "Idle waste", lambda r: data.idle_waste(r.con, r.month, r.project),
            charts={"idle_waste": lambda d, c: charts.idle_waste(d, c.currency, c.admin)}),
    Section("user_waste", "Waste ranking of users", lambda r: waste.user_waste(r.con, r.month, r.project, data.TOP)),
    # the admin report lists the jobs that would fit a smaller GPU; a project's job table
    # notes them job by job
    Section("gpu_fit", "Jobs that fit a smaller GPU",
            lambda r: gpufit.jobs_that_fit(r.con, r.month, r.project, r.shown, data.TOP), audiences=frozenset({ADMIN})),
    Section("leaderboard", "Value leaderboard", _leaderboard,
            charts={"leaderboard": lambda d, c: charts.leaderboard(d, c.currency),
                    "leaderboard_rank": lambda d, c: charts.leaderboard_rank(d, c.currency)}),
    Section("tag_comparison", "Image tags compared",
            lambda r: image_tag_comparison(r.con, r.month, r.project, r.shown),
            also={"versions": lambda r: data.ultralytics_versions(r.con, r.month, r.project, r.shown)}),
    Section("breakers", "Breaker candidates", lambda r: data.breakers(r.con, r.month, r.project, r.tz, r.shown),
            charts={"breakers": lambda d, c: charts.breakers(d, c.currency)}),
    Section("policies", "What policies would have saved",
            lambda r: data.policies(r.con, r.month, r.project, r.timezone, r.shown)),
    Section("tag_violations", "Tag-policy violations", lambda r: data.tag_violations(r.con, r.month, r.project),
            charts={"tag_violations": lambda d, c: charts.tag_violations(d, c.currency)}),
    Section("unallocated", "Unallocated capacity", lambda r: data.unallocated(r.con, r.month, r.shown),
            charts={"unallocated": lambda d, c: charts.unallocated(d)}, audiences=frozenset({ADMIN})),
    Section("rate_card", "Prices", lambda r: ratecard.rate_card(r.con, r.month, r.project, r.currency)),
    # a project's report ends with every job of its month (in the PDF: an appendix); the admin
    # report has too many jobs for that
    Section("jobs", "Jobs", _project_jobs,
            audiences=frozenset({PROJECT})),
)


def shown_to(audience: str) -> tuple[Section, ...]:
    """The sections of `audience`'s report (ADMIN or PROJECT), in page order."""
    return tuple(s for s in SECTIONS if audience in s.audiences)


def titles(audience: str) -> tuple[tuple[str, str], ...]:
    """(id, title) of each section of `audience`'s report, in page order."""
    return tuple((s.id, s.title) for s in shown_to(audience))


def collect(con, month: str, project: str | None, *, timezone: str, grain_seconds: int, currency: str) -> dict:
    """Every section of one audience's report (`report[id]`, and what its templates show
    besides), its money in `currency` (yolocost.money.Currency); the sections marked `last`
    are read after the others, from them."""
    reading = Reading(con, month, project, timezone, grain_seconds, currency)
    for section in sorted(shown_to(audience_of(project)), key=lambda s: s.last):
        reading.report[section.id] = section.read(reading)
        for name, read in section.also.items():
            reading.report[name] = read(reading)
    return reading.report


def figures(report: dict, currency: str, project: str | None) -> dict[str, go.Figure]:
    """The figures of the report for `project` (None: the admin report) by chart name (a
    section without data has none)."""
    admin = project is None
    drawing = Drawing(currency, admin, charts.project_colors(report["projects"]) if admin else None)
    found = {}
    for section in shown_to(audience_of(project)):
        for name, draw in section.charts.items():
            figure = draw(report[section.id], drawing)
            if figure is not None:
                found[name] = figure
    return found
