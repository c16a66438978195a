"""docker/compose.yaml is a valid Compose file whose commands and health checks really exist."""

from __future__ import annotations

import json
import tomllib

import jsonschema
import pytest
from compose_topology import (
    COMPOSE_SCHEMA,
    ENV_EXAMPLE,
    REPO,
    env_files_of,
    environment_of,
    healthcheck_argv,
    load_compose,
    mounts_of,
    read_env_file,
    resolve_tobe_command,
    startup_order,
)

SERVICES = {"mind", "face", "awareness", "hand"}
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


def test_every_health_check_is_a_real_tobe_health_command(compose: dict) -> None:
    for name, service in compose["services"].items():
        argv = healthcheck_argv(service)
        assert argv[:2] == ["tobe", "health"], f"{name}: {argv}"
        resolve_tobe_command(argv)


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
        if name != "mind":
            assert service["depends_on"] == {"mind": {"condition": "service_healthy"}}, name


def test_only_loopback_ports_are_published(compose: dict) -> None:
    published = {name: service.get("ports", []) for name, service in compose["services"].items()}
    assert "127.0.0.1:7420:7420" in published["face"]
    for name, ports in published.items():
        for entry in ports:
            assert str(entry).startswith("127.0.0.1:"), f"{name} publishes {entry}"


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
    services_dir = services["mind"]["command"][-1]
    for name in ("face", "hand", "awareness"):
        volume = f"{name}-credentials"
        assert provisioned[volume] == f"{services_dir}/{name}"
        mounted = [m for m in mounts_of(services[name]) if m.volume.endswith("-credentials")]
        assert [(m.volume, m.target, m.read_only) for m in mounted] == [
            (volume, "/data/credentials", True)
        ]


def test_provider_settings_reach_only_the_mind(compose: dict) -> None:
    for name, service in compose["services"].items():
        assert env_files_of(service) == ([".env"] if name == "mind" else []), name
        for key, value in environment_of(service).items():
            if any(word in key for word in SECRET_WORDS):
                assert not value, f"{name}: {key} has a value in compose.yaml"


def test_env_example_holds_no_secret_and_only_known_settings() -> None:
    from tobe.config import Settings

    values = read_env_file(ENV_EXAMPLE)
    for key, value in values.items():
        if any(word in key for word in SECRET_WORDS):
            assert not value, f"{key} has a value in .env.example"
    for key in values:
        assert key.startswith("TOBE_"), key
        section, _, rest = key.removeprefix("TOBE_").lower().partition("__")
        assert section in Settings.model_fields, f"{key}: no setting {section}"
        if rest:
            fields = Settings.model_fields[section].annotation.model_fields
            assert rest in fields, f"{key}: no setting {section}.{rest}"


def test_the_image_tag_follows_the_project_version(compose: dict) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    for name, service in compose["services"].items():
        assert service["image"] == f"tobe:{version}", name
