"""docker/compose.tls.yaml, the TLS override of docker/compose.yaml, is valid and consistent."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml
from compose_topology import (
    COMPOSE_SCHEMA,
    DOCKER_DIR,
    environment_of,
    healthcheck_argv,
    load_compose,
    mounts_of,
    resolve_tobe_command,
)

from tobe.config import Settings

OVERRIDE = DOCKER_DIR / "compose.tls.yaml"


@pytest.fixture(scope="module")
def override() -> dict[str, Any]:
    return yaml.safe_load(OVERRIDE.read_text())


def test_tls_override_validates_against_the_compose_specification(
    override: dict[str, Any],
) -> None:
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(override), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_tls_override_names_real_settings_and_a_real_health_command(
    override: dict[str, Any],
) -> None:
    base = load_compose()["services"]
    for name, service in override["services"].items():
        assert name in base, f"{name} is not a service of compose.yaml"
        for key, value in environment_of(service).items():
            # pydantic-settings reads the variable: an unknown nested key would be refused.
            settings = Settings.model_validate(_nested(key, value))
            assert settings.model_dump(exclude_defaults=True), f"{key} sets nothing"
    resolve_tobe_command(healthcheck_argv(override["services"]["mind"]))


def test_tls_files_are_read_from_volumes_the_services_mount(override: dict[str, Any]) -> None:
    base = load_compose()["services"]
    for name, service in override["services"].items():
        targets = [mount.target for mount in mounts_of(base[name])]
        for key, value in environment_of(service).items():
            if key.endswith("_FILE"):
                assert any(value.startswith(target + "/") for target in targets), (name, key)


def _nested(key: str, value: str) -> dict[str, Any]:
    """`TOBE_MIND__TLS__CERT_FILE=x` as the settings it stands for: {"mind": {"tls": {...}}}."""
    parts = key.removeprefix("TOBE_").lower().split("__")
    tree: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        tree = {part: tree}
    return tree
