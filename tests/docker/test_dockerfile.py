"""The image runs as a non-root user, installs this checkout's wheel, checks what it runs."""

from __future__ import annotations

import fnmatch
import re
import shlex
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


def test_the_data_directory_is_owner_only_in_the_image() -> None:
    """A new named volume copies its mount point's mode: /data must start 0700, or the Mind
    warns at its first start that its data directory is readable by others."""
    runs = " && ".join(
        arguments for instruction, arguments in dockerfile_final_stage() if instruction == "RUN"
    )
    modes = [shlex.split(part) for part in runs.split("&&") if "chmod" in part]
    owner_only = [words for words in modes if "0700" in words or "700" in words]
    assert any("/data" in words for words in owner_only), modes


def test_the_image_installs_the_wheel_built_from_this_checkout_and_names_no_version() -> None:
    stage = dockerfile_final_stage()
    installs = [args for name, args in stage if name == "RUN" and "pip install" in args]
    assert len(installs) == 1, installs
    words = installs[0].split()
    # Offline, from the build stage's wheels: exactly the tobe wheel `pip wheel .` made.
    assert {"--no-index", "--find-links=/tmp/wheels", "/tmp/wheels/tobe-*.whl"} <= set(words)
    # Mounted from the build stage for that step alone: no layer holds them.
    assert "--mount=type=bind,from=build,source=/wheels,target=/tmp/wheels" in words
    # The version lives in pyproject.toml and the image tag (compose.yaml) only.
    assert project_version() not in DOCKERFILE.read_text()
    assert "tobe==" not in DOCKERFILE.read_text()


def test_no_layer_of_the_image_adds_what_a_later_layer_removes() -> None:
    """A file removed in a later layer still ships in the earlier one (a dead layer)."""
    assert dead_layers(dockerfile_final_stage()) == []
    assert not any(
        name in {"COPY", "ADD"} for name, args in dockerfile_final_stage() if "/wheels" in args
    )


def test_the_dead_layer_check_finds_copied_wheels_removed_later() -> None:
    """The layout the image had: the wheels copied in one layer, removed after installing."""
    stage = dockerfile_final_stage(
        "FROM base\n"
        "COPY --from=build /wheels /tmp/wheels\n"
        "RUN pip install /tmp/wheels/tobe-*.whl \\\n && rm -rf /tmp/wheels\n"
        "COPY docker/x.sh /usr/local/bin/x\n"
        "RUN rm -f /etc/motd\n"
    )
    assert dead_layers(stage) == [("/tmp/wheels", "/tmp/wheels")]


def dead_layers(stage: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(added, removed) pairs: a path a COPY or ADD put in a layer, and the `rm` argument of a
    later RUN that deletes it or a file under it."""
    added: list[str] = []
    found: list[tuple[str, str]] = []
    for instruction, arguments in stage:
        if instruction in {"COPY", "ADD"}:
            added.append(arguments.split()[-1].rstrip("/"))
        elif instruction == "RUN":
            for removed in removed_paths(arguments):
                found += [(path, removed) for path in added if covers(path, removed)]
    return found


def removed_paths(script: str) -> list[str]:
    """The paths the `rm` commands of a RUN's shell script name."""
    paths: list[str] = []
    for command in re.split(r"&&|\|\||;|\n", script):
        words = shlex.split(command)
        if words and words[0] == "rm":
            paths += [word.rstrip("/") for word in words[1:] if not word.startswith("-")]
    return paths


def covers(added: str, removed: str) -> bool:
    """Whether removing `removed` (a path or glob) deletes `added` or something under it."""
    return (
        fnmatch.fnmatch(added, removed)
        or removed.startswith(added + "/")
        or added.startswith(removed + "/")
    )


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
