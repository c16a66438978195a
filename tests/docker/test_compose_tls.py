"""TLS on the compose deployment stays on for every documented `docker compose` command.

TLS is switched in docker/.env, which each command reads twice: as the Mind's env_file and
for the `${…}` of docker/compose.yaml (Face's and the Hand's CA). The configuration each
documented command runs is rendered as Compose renders it (`compose_render`), and each
service's environment is read by ToBe's own settings loader, as the process in the container
reads it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from compose_render import compose_commands, compose_files, render
from compose_topology import (
    COMPOSE_SCHEMA,
    DOCKER_DIR,
    ENV_EXAMPLE,
    REPO,
    env_files_of,
    environment_of,
    example_blocks,
    image_environment,
    mounts_of,
    read_env_file,
)

from management.certificates import CA_CERT, SERVER_CERT, SERVER_KEY
from mind.management.ca_copies import CA_FILE
from tobe.config import Settings, load_settings

DOCUMENTS = (
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    DOCKER_DIR / "compose.yaml",
    ENV_EXAMPLE,
)


def documented_file_sets() -> list[tuple[str, ...]]:
    """Every distinct list of compose files a documented command runs with."""
    found: set[tuple[str, ...]] = set()
    for document in DOCUMENTS:
        for command in compose_commands(document.read_text()):
            if command.split()[2:] == ["version"]:
                continue  # asks Compose itself, runs no project
            found.add(tuple(compose_files(command)))
    return sorted(found)


def tls_block() -> dict[str, str]:
    [block] = [v for k, v in example_blocks(ENV_EXAMPLE).items() if k.startswith("--- TLS")]
    return block


def dotenv(*, tls: bool) -> dict[str, str]:
    """docker/.env as an operator makes it from the example (with the TLS block uncommented)."""
    return {**read_env_file(ENV_EXAMPLE), **(tls_block() if tls else {})}


def service_settings(
    compose: dict[str, Any], name: str, variables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Settings:
    """The settings the service's process reads in its container: the image's ENV, then its
    env_file (`.env` is the operator's docker/.env), then its environment."""
    service = compose["services"][name]
    env = dict(image_environment())
    for env_file in env_files_of(service):
        assert env_file == ".env", f"{name} reads {env_file}, not docker/.env"
        env.update(variables)
    env.update(environment_of(service))
    with monkeypatch.context() as patch:
        for key in [key for key in os.environ if key.startswith("TOBE_")]:
            patch.delenv(key)
        patch.setenv("TOBE_CONFIG", "/nonexistent/config.toml")
        for key, value in env.items():
            patch.setenv(key, value)
        return load_settings()


def test_every_documented_command_runs_the_one_compose_file() -> None:
    """No command names an override that another command would leave out."""
    assert documented_file_sets() == [("docker/compose.yaml",)]


@pytest.mark.parametrize("files", documented_file_sets())
def test_with_tls_in_docker_env_every_documented_command_keeps_tls_on(
    files: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = render([REPO / file for file in files], dotenv(tls=True))
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(compose), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)

    mind = service_settings(compose, "mind", dotenv(tls=True), monkeypatch).mind.tls
    tls_dir = Path(image_environment()["TOBE_DATA_DIR"]) / "tls"
    assert (mind.cert_file, mind.key_file) == (tls_dir / SERVER_CERT, tls_dir / SERVER_KEY)
    face = service_settings(compose, "face", dotenv(tls=True), monkeypatch)
    hand = service_settings(compose, "hand", dotenv(tls=True), monkeypatch)
    assert face.face.mind_tls.ca_file == face.credentials_dir / CA_FILE
    assert hand.hand.tls.ca_file == hand.credentials_dir / CA_FILE
    assert CA_FILE == CA_CERT  # the name `tobe admin tls init` gives the CA beside server.pem


@pytest.mark.parametrize("files", documented_file_sets())
def test_without_tls_in_docker_env_every_service_runs_plaintext(
    files: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = render([REPO / file for file in files], dotenv(tls=False))
    assert (
        service_settings(compose, "mind", dotenv(tls=False), monkeypatch).mind.tls.cert_file is None
    )
    face = service_settings(compose, "face", dotenv(tls=False), monkeypatch)
    hand = service_settings(compose, "hand", dotenv(tls=False), monkeypatch)
    assert face.face.mind_tls.ca_file is None
    assert hand.hand.tls.ca_file is None


def test_face_and_the_hand_read_the_ca_from_the_volume_the_mind_copies_it_into() -> None:
    """`tobe mind serve` writes $TOBE_PROVISION_DIR/<service>/ca.pem (`ca_copies`): the volume
    the Mind mounts there is the one Face and the Hand mount as their credentials."""
    services = render([DOCKER_DIR / "compose.yaml"], dotenv(tls=True))["services"]
    provision_dir = environment_of(services["mind"])["TOBE_PROVISION_DIR"]
    mind_mounts = {mount.target: mount.volume for mount in mounts_of(services["mind"])}
    for name, setting in (
        ("face", "TOBE_FACE__MIND_TLS__CA_FILE"),
        ("hand", "TOBE_HAND__TLS__CA_FILE"),
    ):
        ca_path = Path(environment_of(services[name])[setting])
        [mount] = [m for m in mounts_of(services[name]) if Path(m.target) == ca_path.parent]
        assert mind_mounts[f"{provision_dir}/{name}"] == mount.volume, name
