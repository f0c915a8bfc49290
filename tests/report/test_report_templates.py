"""Templates are files: a folder of your own overrides the shipped ones by file name, and
everything it does not override still comes from the shipped set."""

from __future__ import annotations

import dataclasses
import re

from helpers.reportkit import MONTH

from yolocost.report import ADMIN_SECTIONS, PROJECT_SECTIONS, render_reports
from yolocost.resources import shipped_dir


def _sections(page: str) -> dict[str, str]:
    return dict(re.findall(r'<section id="(\w+)">(.*?)</section>', page, re.S))


def _render(config, tmp_path, name, templates=None) -> str:
    config = dataclasses.replace(config, report_dir=tmp_path / name)
    result = render_reports(config, MONTH, ["admin"], ["html"], templates_dir=templates)
    return result.files[0].read_text(encoding="utf-8")


def test_overriding_one_section_changes_that_section_only(sample_db, tmp_path):
    mine = tmp_path / "my-templates"
    (mine / "sections").mkdir(parents=True)
    (mine / "sections" / "idle_waste.html").write_text(
        '<section id="idle_waste"><h2>Idle time, our way</h2>'
        "<p>{{ r.idle_waste.jobs | length }} jobs, first {{ r.idle_waste.jobs[0].job_id }}</p></section>\n",
        encoding="utf-8")
    shipped = _render(sample_db.config, tmp_path, "shipped")
    custom = _render(sample_db.config, tmp_path, "custom", templates=mine)

    a, b = _sections(shipped), _sections(custom)
    assert list(a) == list(b) and "idle_waste" in a and list(a) == [s for s, _ in ADMIN_SECTIONS]
    assert "Idle time, our way" in b["idle_waste"] and "Idle time, our way" not in shipped
    assert re.search(r"15 jobs, first job-\d{6}", b["idle_waste"])
    assert "Jobs with the most idle waste" in a["idle_waste"] and "Jobs with the most idle waste" not in custom
    for name in a:
        if name != "idle_waste":
            assert a[name] == b[name], name  # every other section is the shipped one, unchanged
    # its chart is not drawn by the custom section, the others still are
    assert 'data-chart="chart-idle_waste"' not in custom and 'data-chart="chart-daily"' in custom


def test_config_templates_dir_is_used_and_the_option_wins(sample_db, tmp_path):
    from_config, from_option = tmp_path / "cfg", tmp_path / "opt"
    for folder, word in ((from_config, "from-config"), (from_option, "from-option")):
        (folder / "sections").mkdir(parents=True)
        (folder / "sections" / "actions.html").write_text(f'<section id="actions">{word}</section>', encoding="utf-8")
    config = dataclasses.replace(sample_db.config, templates_dir=from_config)
    assert "from-config" in _render(config, tmp_path, "a")
    page = _render(config, tmp_path, "b", templates=from_option)
    assert "from-option" in page and "from-config" not in page


def test_shipped_templates_are_a_layout_and_one_partial_per_section():
    templates = shipped_dir("templates")
    assert (templates / "report.html").is_file() and (templates / "summary.html").is_file()
    names = {p.stem for p in (templates / "sections").glob("*.html")}
    assert names == {s for s, _ in ADMIN_SECTIONS + PROJECT_SECTIONS} >= {
        "headline", "actions", "trend", "daily", "projects", "users", "gpu_models", "image_tags", "density",
        "idle_waste", "leaderboard", "breakers", "tag_violations", "unallocated", "rate_card", "jobs"}


def test_a_broken_override_is_one_line_naming_its_file_and_line(sample_db, tmp_path):
    import pytest

    from yolocost.errors import YolocostError

    cases = {
        "syntax": ("<section id=\"actions\">\n{% if %}\n</section>", "actions.html:2: TemplateSyntaxError"),
        "undefined": ("<section id=\"actions\">\n\n{{ no_such_value.x }}</section>", "actions.html:3: UndefinedError"),
        "include": ("<section id=\"actions\">{% include 'nope.html' %}</section>", "TemplateNotFound: nope.html"),
    }
    for name, (text, where) in cases.items():
        mine = tmp_path / name
        (mine / "sections").mkdir(parents=True)
        (mine / "sections" / "actions.html").write_text(text, encoding="utf-8")
        with pytest.raises(YolocostError) as info:
            _render(sample_db.config, tmp_path, f"out-{name}", templates=mine)
        assert where in str(info.value), str(info.value)
        assert "\n" not in str(info.value)


def test_an_override_can_extend_the_shipped_template_it_replaces(sample_db, tmp_path):
    """A user's report.html that extends "yolocost/report.html" (the shipped one, whatever the
    user's folder holds) replaces one block and keeps the rest, every section included."""
    mine = tmp_path / "extending"
    mine.mkdir()
    (mine / "report.html").write_text(
        '{% extends "yolocost/report.html" %}\n'
        '{% block footer %}<footer><p>Questions: gpu-admins, {{ month }}</p></footer>{% endblock %}\n',
        encoding="utf-8")
    shipped = _render(sample_db.config, tmp_path, "shipped")
    custom = _render(sample_db.config, tmp_path, "custom", templates=mine)

    assert f"Questions: gpu-admins, {MONTH}" in custom and "Questions: gpu-admins" not in shipped
    assert "Costs are kept to 1e-9" in shipped and "Costs are kept to 1e-9" not in custom
    a, b = _sections(shipped), _sections(custom)
    assert list(b) == [s for s, _ in ADMIN_SECTIONS] and a == b  # the shipped sections, unchanged
