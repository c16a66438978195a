"""Bad front matter is reported with its file and line, and that skill alone is skipped."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from mind.skills.catalog import SkillProblem
from mind.skills.store import SkillStore

# The `write_skill` fixture: (directory, relative path, name, **front matter) -> path.
WriteSkill = Callable[..., Path]

BAD = {
    "not_yaml": ("---\nname: brew\ndescription: [unclosed\n---\nbody\n", 4, "not valid YAML"),
    "missing_name": ("---\ndescription: About.\n---\nbody\n", 1, "'name' is missing"),
    "empty_description": ("---\nname: brew\ndescription: ''\n---\n", 3, "'description' must"),
    "groups_not_a_list": (
        "---\nname: brew\ndescription: d\ngroups: default\n---\n",
        4,
        "'groups' must be a list",
    ),
    "always_not_a_bool": (
        "---\nname: brew\ndescription: d\nalways: sometimes\n---\n",
        4,
        "'always' must be true or false",
    ),
    "unknown_key": (
        "---\nname: brew\ndescription: d\n\npriority: 3\n---\n",
        5,
        "unknown key 'priority'",
    ),
    "not_a_mapping": ("---\n- name\n---\n", 1, "must be a mapping"),
    "no_front_matter": ("# Just markdown\n", 1, "starts with a '---' line"),
    "unclosed_front_matter": ("---\nname: brew\n", 1, "not closed"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_front_matter_is_reported_with_file_and_line_and_the_skill_is_skipped(
    case: str, tmp_path: Path, write_skill: WriteSkill, caplog: pytest.LogCaptureFixture
) -> None:
    text, line, message = BAD[case]
    bad = tmp_path / "bad.skill.md"
    bad.write_text(text, encoding="utf-8")
    write_skill(tmp_path, "good.skill.md", "good")

    with caplog.at_level(logging.WARNING, logger="mind.skills"):
        catalog = SkillStore([tmp_path]).reload()

    assert list(catalog.skills) == ["good"]
    (problem,) = catalog.errors
    assert (problem.path, problem.line) == (bad, line)
    assert message in problem.message
    assert f"{bad}:{line}: " in caplog.text


def test_a_file_that_is_not_utf8_is_reported_not_raised(tmp_path: Path) -> None:
    bad = tmp_path / "bad.skill.md"
    bad.write_bytes(b"---\nname: \xff\n---\n")

    catalog = SkillStore([tmp_path]).reload()

    assert catalog.errors == [SkillProblem(bad, 1, "not UTF-8 text")]


def test_a_problem_already_reported_is_not_logged_again_at_the_next_reload(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "bad.skill.md").write_text("no front matter", encoding="utf-8")
    store = SkillStore([tmp_path])
    with caplog.at_level(logging.WARNING, logger="mind.skills"):
        store.reload()
    assert "skill skipped" in caplog.text
    caplog.clear()

    with caplog.at_level(logging.WARNING, logger="mind.skills"):
        catalog = store.reload()

    assert len(catalog.errors) == 1
    assert "skill skipped" not in caplog.text
