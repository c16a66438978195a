"""TLS on the compose deployments stays on for every documented `docker compose` command.

TLS is switched in docker/.env, which each command reads twice: as the Minds' env_file and
for the `${…}` of the compose file (Face's and the Hand's CA). The configuration each
documented command runs is rendered as Compose renders it (`compose_render`), and each
service's environment is read by ToBe's own settings loader, as the process in the container
reads it.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from compose_render import compose_commands, compose_files, render
from compose_topology import (
    CLUSTER_FILE,
    COMPOSE_SCHEMA,
    DOCKER_DIR,
    ENV_EXAMPLE,
    REPO,
    environment_of,
    example_blocks,
    image_environment,
    mounts_of,
    read_env_file,
    service_settings,
    services_running,
)

from management.certificate_files import CA_CERT, SERVER_CERT, SERVER_KEY
from mind.management.ca_copies import CA_FILE

DOCUMENTS = (
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    DOCKER_DIR / "compose.yaml",
    CLUSTER_FILE,
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


def test_every_documented_command_runs_one_of_the_two_compose_files_alone() -> None:
    """One Mind on SQLite or two on PostgreSQL; no command names an override that another
    command would leave out, except the telemetry profile's, which only adds to the first (the
    tests below check that TLS stays as it was with it)."""
    assert documented_file_sets() == [
        ("docker/compose.cluster.yaml",),
        ("docker/compose.yaml",),
        ("docker/compose.yaml", "docker/compose.telemetry.yaml"),
    ]


@pytest.mark.parametrize("files", documented_file_sets())
def test_with_tls_in_docker_env_every_documented_command_keeps_tls_on(
    files: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = render([REPO / file for file in files], dotenv(tls=True))
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(compose), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)

    tls_dir = Path(image_environment()["TOBE_DATA_DIR"]) / "tls"
    minds = services_running(compose, "mind")
    assert minds
    for name in minds:
        mind = service_settings(compose, name, dotenv(tls=True), monkeypatch).mind.tls
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
    for name in services_running(compose, "mind"):
        tls = service_settings(compose, name, dotenv(tls=False), monkeypatch).mind.tls
        assert tls.cert_file is None, name
    face = service_settings(compose, "face", dotenv(tls=False), monkeypatch)
    hand = service_settings(compose, "hand", dotenv(tls=False), monkeypatch)
    assert face.face.mind_tls.ca_file is None
    assert hand.hand.tls.ca_file is None


@pytest.mark.parametrize("path", [DOCKER_DIR / "compose.yaml", CLUSTER_FILE], ids=["one", "two"])
def test_face_and_the_hand_read_the_ca_from_the_volume_the_mind_copies_it_into(
    path: Path,
) -> None:
    """`tobe mind serve` writes $TOBE_PROVISION_DIR/<service>/ca.pem (`ca_copies`): the volume
    the provisioning Mind mounts there is the one Face and the Hand mount as their
    credentials."""
    compose = render([path], dotenv(tls=True))
    services = compose["services"]
    [provisioner] = [
        name
        for name in services_running(compose, "mind")
        if "TOBE_PROVISION_DIR" in environment_of(services[name])
    ]
    provision_dir = environment_of(services[provisioner])["TOBE_PROVISION_DIR"]
    mind_mounts = {mount.target: mount.volume for mount in mounts_of(services[provisioner])}
    for name, setting in (
        ("face", "TOBE_FACE__MIND_TLS__CA_FILE"),
        ("hand", "TOBE_HAND__TLS__CA_FILE"),
    ):
        ca_path = Path(environment_of(services[name])[setting])
        [mount] = [m for m in mounts_of(services[name]) if Path(m.target) == ca_path.parent]
        assert mind_mounts[f"{provision_dir}/{name}"] == mount.volume, name
