"""The image runs as a non-root user, installs this checkout's wheel, checks what it runs."""

from __future__ import annotations

import tomllib

from compose_topology import (
    DOCKER_DIR,
    DOCKERFILE,
    DOCKERIGNORE,
    REPO,
    dockerfile_final_stage,
    image_environment,
    image_programs,
)


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


def test_the_image_installs_the_wheel_built_from_this_checkout_and_names_no_version() -> None:
    stage = dockerfile_final_stage()
    installs = [args for name, args in stage if name == "RUN" and "pip install" in args]
    assert len(installs) == 1, installs
    words = installs[0].split()
    # Offline, from the build stage's wheels: exactly the tobe wheel `pip wheel .` made.
    assert {"--no-index", "--find-links=/tmp/wheels", "/tmp/wheels/tobe-*.whl"} <= set(words)
    assert ("COPY", "--from=build /wheels /tmp/wheels") in stage
    # The version lives in pyproject.toml and the image tag (compose.yaml) only.
    assert project_version() not in DOCKERFILE.read_text()
    assert "tobe==" not in DOCKERFILE.read_text()


def test_the_image_health_check_is_the_installed_script_and_defaults_to_the_mind() -> None:
    stage = dockerfile_final_stage()
    [check] = [args for name, args in stage if name == "HEALTHCHECK"]
    assert check.endswith('CMD ["tobe-healthcheck"]'), check
    assert image_programs() == {"tobe-healthcheck": DOCKER_DIR / "healthcheck.sh"}
    # With nothing set, the image runs the Mind (its CMD) and checks the Mind.
    assert image_environment()["TOBE_SERVICE"] == "mind"
    assert [args for name, args in stage if name == "CMD"] == ['["tobe", "mind", "serve"]']


def test_everything_the_image_copies_is_in_the_build_context() -> None:
    """.dockerignore excludes all but what it names: each COPY source must be named."""
    included = {
        line.removeprefix("!") for line in DOCKERIGNORE.read_text().splitlines() if line[:1] == "!"
    }
    sources = {
        source
        for line in DOCKERFILE.read_text().splitlines()
        if line.startswith("COPY ") and "--from=" not in line
        for source in [w for w in line.split()[1:-1] if not w.startswith("--")]
    }
    assert "docker/healthcheck.sh" in sources
    assert sources <= included, sources - included


def test_the_final_stage_parser_joins_continuations_and_restarts_at_from() -> None:
    text = "FROM a AS build\nRUN pip install x\nFROM b\nENV A=1 \\\n    B=2\n# note\nUSER 10:10\n"
    assert dockerfile_final_stage(text) == [
        ("FROM", "b"),
        ("ENV", "A=1 B=2"),
        ("USER", "10:10"),
    ]
    assert DOCKERFILE.is_file()
