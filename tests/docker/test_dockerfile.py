"""The image runs as a non-root user and installs exactly this version of the project."""

from __future__ import annotations

import re
import tomllib

from compose_topology import DOCKERFILE, REPO, dockerfile_final_stage, resolve_tobe_command

PINNED = re.compile(r"""["']?tobe==(?P<version>[^"'\s]+)["']?""")


def project_version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_the_final_stage_runs_as_a_numeric_non_root_user() -> None:
    stage = dockerfile_final_stage()
    users = [arguments for instruction, arguments in stage if instruction == "USER"]
    assert users, "the final stage sets no USER: it would run as root"
    user, _, group = users[-1].partition(":")
    assert user.isdigit() and int(user) != 0, users[-1]
    assert not group or (group.isdigit() and int(group) != 0), users[-1]
    # Nothing is built or installed after switching to that user.
    after = stage[[i for i, (name, _) in enumerate(stage) if name == "USER"][-1] + 1 :]
    assert all(instruction != "RUN" for instruction, _ in after), after


def test_the_installed_version_is_the_project_version() -> None:
    installs = [
        arguments
        for instruction, arguments in dockerfile_final_stage()
        if instruction == "RUN" and "pip install" in arguments
    ]
    pins = [match["version"] for line in installs for match in PINNED.finditer(line)]
    assert pins == [project_version()], installs


def test_the_image_health_check_is_a_real_tobe_command() -> None:
    checks = [args for name, args in dockerfile_final_stage() if name == "HEALTHCHECK"]
    assert len(checks) == 1 and "tobe health --target" in checks[0]
    resolve_tobe_command(["tobe", "health", "--target", "127.0.0.1:7410"])


def test_the_final_stage_parser_joins_continuations_and_restarts_at_from() -> None:
    text = "FROM a AS build\nRUN pip install x\nFROM b\nENV A=1 \\\n    B=2\n# note\nUSER 10:10\n"
    assert dockerfile_final_stage(text) == [
        ("FROM", "b"),
        ("ENV", "A=1 B=2"),
        ("USER", "10:10"),
    ]
    assert DOCKERFILE.is_file()
