"""The README, ARCHITECTURE.md and docs/ show only what is real.

Every relative link and anchor resolves, every `tobe …` command shown exists with the options
shown (and its `--help` runs), and every setting named is a key of `tobe.config.Settings`. Each
check is also run on a planted mistake, so a check that stopped looking would fail here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from docs_check import (
    cited_test_problems,
    command_problems,
    documents,
    link_problems,
    setting_problems,
    shown_commands,
    unlisted_settings,
)

from tobe.cli import main

ROOT = Path(__file__).resolve().parents[2]
README_LIMIT = 250


@pytest.fixture(scope="module")
def docs() -> list[Path]:
    return documents(ROOT)


def test_the_readme_is_a_landing_page_of_at_most_250_lines() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= README_LIMIT


def test_the_readme_shows_the_test_command_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = ci.split("# The README's test command:\n", 1)[1].splitlines()[0]
    assert command in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_guides_are_all_listed_in_the_index(docs: list[Path]) -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    guides = [path for path in docs if path.parent == ROOT / "docs" and path.name != "index.md"]
    assert guides
    assert [path.name for path in guides if f"]({path.name})" not in index] == []


def test_every_link_and_anchor_in_the_docs_resolves(docs: list[Path]) -> None:
    assert link_problems(docs, ROOT) == []


def test_every_tobe_command_the_docs_show_exists_with_its_options(docs: list[Path]) -> None:
    assert command_problems(docs, ROOT, main) == []


def test_every_command_the_docs_show_answers_help(docs: list[Path]) -> None:
    paths = shown_commands(docs, main)
    assert ("up",) in paths and ("admin", "credentials", "create") in paths
    runner = CliRunner()
    failed = {
        path: result.output
        for path in sorted(paths)
        if (result := runner.invoke(main, [*path, "--help"])).exit_code != 0
    }
    assert failed == {}


def test_every_setting_the_docs_name_is_a_configuration_key(docs: list[Path]) -> None:
    assert setting_problems(docs, ROOT) == []


def test_the_configuration_reference_lists_every_setting() -> None:
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert unlisted_settings(reference) == []


def test_the_reference_check_names_a_setting_left_out() -> None:
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert unlisted_settings(reference.replace("`mind.step_limit`", "")) == ["mind.step_limit"]
    assert "face.web.tls.cert_file" in unlisted_settings(reference.replace("`face.web.tls.*`", ""))


def test_every_test_the_docs_cite_exists(docs: list[Path]) -> None:
    assert cited_test_problems(docs, ROOT) == []


PLANTED = """# Guide

## Real heading

See [the real heading](#real-heading) and [the map](../ARCHITECTURE.md).
See [a missing guide](missing.md), [a missing heading](#no-such-heading) and
[a missing heading elsewhere](../README.md#no-such-section).

```bash
tobe up --port-base 7500
tobe admin credentails list
tobe up --no-such-option
```

Run `tobe dcotor`, set `[mind] welcome` and `[mind] welcme`, `face.web.listen` and
`face.web.lisen`, or `TOBE_FACE__QUEUE_SIZE` and `TOBE_FACE__QUEUE_SIZ`.

Kept by `tests/contracts/test_docs.py::test_every_test_the_docs_cite_exists`,
`::test_no_such_test` and `tests/contracts/test_no_such_file.py`.

```toml
[scheduler]
time_zone = "Europe/Paris"
time_zon = "Europe/Paris"

[[profiles.profile]]
name = "coach"
platform_tools = []
persona_text = "wrong"
```
"""


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A guide with one right and at least one wrong example of every checked kind."""
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / ".ci").mkdir()
    (root / ".ci" / "run").write_text("", encoding="utf-8")
    (root / "README.md").write_text("# ToBe\n\n## Run it\n", encoding="utf-8")
    (root / "ARCHITECTURE.md").write_text("# Architecture\n", encoding="utf-8")
    (root / "docs" / "guide.md").write_text(PLANTED, encoding="utf-8")
    return root


def test_the_link_check_names_each_broken_link_and_anchor(planted: Path) -> None:
    problems = link_problems(documents(planted), planted)
    assert [problem.split(": ", 1)[1] for problem in problems] == [
        "link 'missing.md' names no file",
        "link '#no-such-heading' names no heading of docs/guide.md",
        "link '../README.md#no-such-section' names no heading of README.md",
    ]


def test_the_command_check_names_each_unknown_command_and_option(planted: Path) -> None:
    problems = command_problems(documents(planted), planted, main)
    assert [problem.split(": ", 1)[1] for problem in problems] == [
        "`tobe admin` has no subcommand 'credentails'",
        "`tobe up` has no option --no-such-option",
        "`tobe` has no subcommand 'dcotor'",
    ]


def test_the_setting_check_names_each_unknown_key_and_variable(planted: Path) -> None:
    problems = setting_problems(documents(planted), planted)
    assert [problem.split(": ", 1)[1] for problem in problems] == [
        "[mind] welcme is no setting",
        "face.web.lisen is no setting",
        "TOBE_FACE__QUEUE_SIZ is no setting, and no code reads it",
        "[scheduler] time_zon is no setting",
        "[profiles.profile] persona_text is no setting",
    ]


def test_the_test_reference_check_names_each_missing_test_and_file(planted: Path) -> None:
    (planted / "tests" / "contracts").mkdir(parents=True)
    (planted / "tests" / "contracts" / "test_docs.py").write_text(
        Path(__file__).read_text(encoding="utf-8"), encoding="utf-8"
    )
    problems = cited_test_problems(documents(planted), planted)
    assert [problem.split(": ", 1)[1] for problem in problems] == [
        "::test_no_such_test names no test",
        "tests/contracts/test_no_such_file.py is no file",
    ]
