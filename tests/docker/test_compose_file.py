"""docker/compose.yaml is a valid Compose file whose commands and health checks really exist."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from compose_topology import (
    COMPOSE_FILE,
    COMPOSE_SCHEMA,
    DOCKER_DIR,
    DOCKERFILE,
    ENV_EXAMPLE,
    REPO,
    dockerfile_final_stage,
    env_files_of,
    environment_of,
    example_blocks,
    healthcheck_argv,
    image_environment,
    image_healthcheck,
    image_programs,
    load_compose,
    mounts_of,
    program_interpreter,
    read_env_file,
    resolve_tobe_command,
    startup_order,
)
from pydantic import BaseModel

from tobe.config import Settings, load_settings
from tobe.runtime.probes import target

SERVICES = {"mind", "face", "awareness", "hand", "channels"}
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


@pytest.fixture(scope="module")
def compose() -> dict:
    return load_compose()


def test_compose_file_validates_against_the_compose_specification(compose: dict) -> None:
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(compose), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_every_service_runs_its_own_tobe_serve_command(compose: dict) -> None:
    services = compose["services"]
    assert set(services) == SERVICES
    for name, service in services.items():
        command = service["command"]
        assert command[:3] == ["tobe", name, "serve"], command
        assert resolve_tobe_command(command).name == "serve"


def test_every_service_is_health_checked_by_the_image_for_the_service_it_names(
    compose: dict,
) -> None:
    for name, service in compose["services"].items():
        assert healthcheck_argv(service) == image_healthcheck(), name
        assert environment_of(service)["TOBE_SERVICE"] == service["command"][1], name


def test_each_service_answers_probes_on_the_loopback_address_its_health_check_reads(
    compose: dict,
) -> None:
    """The image names a probe address per service; each service's settings read it (the Hand's
    beside its gRPC health socket), and it stays inside the container: loopback, unpublished."""
    ports = set()
    for name, service in compose["services"].items():
        env = {**image_environment(), **environment_of(service)}
        probe = env[f"TOBE_{name.upper()}__PROBE_LISTEN"]
        host, _, port = probe.rpartition(":")
        assert host == "127.0.0.1" and port.isdigit(), f"{name}: {probe}"
        section = Settings.model_fields[name].annotation
        assert isinstance(section, type) and issubclass(section, BaseModel), name
        assert "probe_listen" in section.model_fields, name
        published = [str(entry).rsplit(":", 1)[-1] for entry in service.get("ports") or []]
        listen = env.get(f"TOBE_{name.upper()}__LISTEN", "")
        assert port not in published and not listen.endswith(f":{port}"), name
        ports.add(port)
    assert len(ports) == len(SERVICES)


def test_the_image_health_check_refuses_an_unknown_service_in_one_line() -> None:
    result = run_image_check({"TOBE_SERVICE": "brain"})
    assert result.returncode == 1 and not result.stdout
    assert result.stderr.splitlines() == [
        "TOBE_SERVICE is 'brain': set it to mind, face, awareness, hand or channels"
    ]


def test_the_image_health_check_names_the_probe_setting_it_lacks() -> None:
    result = run_image_check({"TOBE_SERVICE": "face"})
    assert result.returncode == 1 and not result.stdout
    assert result.stderr.splitlines() == [
        "TOBE_FACE__PROBE_LISTEN is '': set it to the host:port the face answers probes on"
    ]


def test_resolving_refuses_unknown_subcommands_and_options() -> None:
    with pytest.raises(AssertionError, match="no subcommand"):
        resolve_tobe_command(["tobe", "mind", "serf"])
    with pytest.raises(Exception, match="No such option"):
        resolve_tobe_command(["tobe", "hand", "serve", "--health-port", "1"])


def test_services_start_after_a_healthy_mind_and_restart_on_failure(compose: dict) -> None:
    services = compose["services"]
    assert startup_order(services)[0] == "mind"
    for name, service in services.items():
        assert service["restart"] in {"unless-stopped", "always", "on-failure"}, name
        # The channels dial Face, as a client does.
        after = "face" if name == "channels" else "mind"
        if name != "mind":
            assert service["depends_on"] == {after: {"condition": "service_healthy"}}, name


def test_only_loopback_ports_are_published(compose: dict) -> None:
    published = {name: service.get("ports", []) for name, service in compose["services"].items()}
    assert "127.0.0.1:7420:7420" in published["face"]
    for name, ports in published.items():
        for entry in ports:
            assert str(entry).startswith("127.0.0.1:"), f"{name} publishes {entry}"


def test_face_serves_the_web_client_on_the_port_it_publishes_on_loopback(compose: dict) -> None:
    face = compose["services"]["face"]
    listen = environment_of(face)["TOBE_FACE__WEB__LISTEN"]
    host, _, port = listen.rpartition(":")
    # Every interface of the container, so that Docker's port mapping reaches it.
    assert host == "0.0.0.0"
    assert f"127.0.0.1:{port}:{port}" in face["ports"]


def test_only_the_services_keeping_data_mount_a_volume_on_it(compose: dict) -> None:
    # The image declares no VOLUME, so nothing gets an anonymous volume either.
    assert all(instruction != "VOLUME" for instruction, _ in dockerfile_final_stage())
    services = compose["services"]
    on_data = {
        name
        for name, service in services.items()
        for m in mounts_of(service)
        if m.target == "/data"
    }
    assert on_data == {"mind", "awareness"}
    for name in on_data:
        [mount] = [m for m in mounts_of(services[name]) if m.target == "/data"]
        assert mount.volume in compose["volumes"] and not mount.read_only, name


def test_mind_data_is_a_named_volume_holding_the_management_socket(compose: dict) -> None:
    mind = compose["services"]["mind"]
    data = [m for m in mounts_of(mind) if m.target == "/data"]
    assert data and data[0].volume in compose["volumes"]
    # `docker compose exec mind tobe admin …` finds the socket in the data directory.
    from tobe.config import Settings

    settings = Settings(data_dir="/data")
    assert str(settings.management_socket).startswith("/data/")


def test_each_service_sees_only_its_own_credential_volume(compose: dict) -> None:
    services = compose["services"]
    provisioned = {m.volume: m.target for m in mounts_of(services["mind"])}
    services_dir = environment_of(services["mind"])["TOBE_PROVISION_DIR"]
    for name in ("face", "hand", "awareness"):
        volume = f"{name}-credentials"
        assert provisioned[volume] == f"{services_dir}/{name}"
        mounted = [m for m in mounts_of(services[name]) if m.volume.endswith("-credentials")]
        assert [(m.volume, m.target, m.read_only) for m in mounted] == [
            (volume, "/data/credentials", True)
        ]


def test_provider_settings_reach_only_the_mind(compose: dict) -> None:
    own = {"mind": [".env"], "channels": ["channels.env"]}
    for name, service in compose["services"].items():
        assert env_files_of(service) == own.get(name, []), name
        for key, value in environment_of(service).items():
            if any(word in key for word in SECRET_WORDS):
                assert not value, f"{name}: {key} has a value in compose.yaml"


def is_secret(key: str) -> bool:
    """A setting holding a secret; a `…_FILE` (TOBE_MIND__TLS__KEY_FILE) names a file."""
    return any(word in key for word in SECRET_WORDS) and not key.endswith("_FILE")


def test_env_example_holds_no_secret_and_only_known_settings() -> None:
    from tobe.config import Settings

    values = read_env_file(ENV_EXAMPLE)
    for block in example_blocks(ENV_EXAMPLE).values():
        values.update({key: value for key, value in block.items() if key.startswith("TOBE_")})
        assert not [v for k, v in block.items() if is_secret(k) and v]
    for key, value in values.items():
        if is_secret(key):
            assert not value, f"{key} has a value in .env.example"
    for key in values:
        assert key.startswith("TOBE_"), key
        model: Any = Settings
        for part in key.removeprefix("TOBE_").lower().split("__"):
            assert part in model.model_fields, f"{key}: no setting {part} in {model.__name__}"
            model = model.model_fields[part].annotation


def test_the_image_tag_follows_the_project_version_and_is_written_once(compose: dict) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    for name, service in compose["services"].items():
        assert service["image"] == f"tobe:{version}", name
    assert COMPOSE_FILE.read_text().count(version) == 1
    assert version not in DOCKERFILE.read_text()


def test_the_mind_builds_the_image_once_and_the_others_never_pull_it(compose: dict) -> None:
    services = compose["services"]
    builders = {name for name, service in services.items() if "build" in service}
    assert builders == {"mind"} == {startup_order(services)[0]}
    build = services["mind"]["build"]
    context = (DOCKER_DIR / build["context"]).resolve()
    assert (context, context / build["dockerfile"]) == (REPO, DOCKERFILE)
    for name, service in services.items():
        if name != "mind":
            assert service["pull_policy"] == "never", name


def test_the_mind_is_told_where_face_listens_for_admin_status_and_chat(
    compose: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`tobe admin status` and `tobe chat` in the Mind's container find Face by its service
    name, on the port Face listens on."""
    services = compose["services"]
    face_port = environment_of(services["face"])["TOBE_FACE__LISTEN"].rpartition(":")[2]
    for key in [key for key in os.environ if key.startswith("TOBE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("TOBE_CONFIG", "/nonexistent/config.toml")
    for key, value in environment_of(services["mind"]).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TOBE_DATA_DIR", str(tmp_path))  # no Face published its address there
    assert target(load_settings(), "face").address == f"face:{face_port}"


def run_image_check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    [program] = image_healthcheck()
    script = image_programs()[program]
    return subprocess.run(
        [*program_interpreter(script), str(script)],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_the_channels_run_only_with_their_profile_and_share_their_state_with_the_mind(
    compose: dict,
) -> None:
    from face.channels.state import state_file

    services = compose["services"]
    channels = services["channels"]
    assert channels["profiles"] == ["channels"]
    # `tobe admin channels` run in the Mind's container reads the state the channels write.
    directory = str(state_file(Path("/data")).parent)
    shared = ("channels-data", directory, False)
    assert [(m.volume, m.target, m.read_only) for m in mounts_of(channels)] == [shared]
    assert shared in [(m.volume, m.target, m.read_only) for m in mounts_of(services["mind"])]
    # It dials Face where Face listens, as a client.
    face_port = environment_of(services["face"])["TOBE_FACE__LISTEN"].rpartition(":")[2]
    assert environment_of(channels)["TOBE_FACE__LISTEN"] == f"face:{face_port}"
