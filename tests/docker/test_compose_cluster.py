"""docker/compose.cluster.yaml: two Minds on one PostgreSQL server, rendered as Compose renders
it (no Docker here) and each service's settings read by ToBe's own loader, as the process in
its container reads them.

The services it shares with docker/compose.yaml are held to that file: they differ only in
what the second Mind changes, so a fix made in one file cannot be forgotten in the other.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from compose_render import compose_commands, compose_files, render
from compose_topology import (
    CLUSTER_FILE,
    COMPOSE_FILE,
    COMPOSE_SCHEMA,
    ENV_EXAMPLE,
    REPO,
    dockerfile_final_stage,
    env_files_of,
    environment_of,
    example_blocks,
    healthcheck_argv,
    image_healthcheck,
    load_compose,
    mounts_of,
    read_env_file,
    resolve_tobe_command,
    service_settings,
    services_running,
    startup_order,
)

from management.doctor.cluster import cluster_finding
from management.doctor.postgresql import MINIMUM_VERSION
from management.doctor.report import Status
from mind.management.local_credentials import awareness_token_file
from mind.store.engine import sync_url
from tobe.config import Settings

LOCAL_ONLY_PASSWORD = "tobe-local-only"
# What the second Mind changes in the services compose.yaml also runs (by service): the
# environment keys that differ, and the other keys that differ.
CHANGED_ENVIRONMENT = {
    "face": {"TOBE_FACE__MIND_ADDRESS", "TOBE_FACE__MIND_ADDRESSES"},
    "hand": {"TOBE_HAND__MIND_ADDRESS"},
    "awareness": set(),
    "channels": set(),
}
MIND_ENVIRONMENT = {
    "TOBE_DATABASE_URL",
    "PGPASSWORD",
    "TOBE_MIND__NODE_ID",
    "TOBE_MIND__ADVERTISE_ADDRESS",
}
PROVISIONING = {"TOBE_PROVISION_DIR", "TOBE_HAND__NAME"}


@pytest.fixture(scope="module")
def cluster() -> dict[str, Any]:
    return load_compose(CLUSTER_FILE)


@pytest.fixture(scope="module")
def single() -> dict[str, Any]:
    return load_compose(COMPOSE_FILE)


def dotenv() -> dict[str, str]:
    """docker/.env as copied from the example, unedited."""
    return read_env_file(ENV_EXAMPLE)


def settings_of(compose: dict[str, Any], name: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    return service_settings(compose, name, dotenv(), monkeypatch)


def minds(compose: dict[str, Any]) -> list[str]:
    return services_running(compose, "mind")


def provisioner(compose: dict[str, Any]) -> str:
    [name] = [n for n in minds(compose) if "TOBE_PROVISION_DIR" in env(compose, n)]
    return name


def env(compose: dict[str, Any], name: str) -> dict[str, str]:
    return environment_of(compose["services"][name])


def test_the_cluster_file_validates_against_the_compose_specification(cluster: dict) -> None:
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(cluster), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_it_runs_postgresql_two_minds_and_the_single_mind_files_other_services(
    cluster: dict, single: dict
) -> None:
    services = cluster["services"]
    assert minds(cluster) == ["mind-a", "mind-b"]
    assert set(services) == {"postgres", *minds(cluster), *(set(single["services"]) - {"mind"})}
    for name in set(services) - {"postgres"}:
        assert resolve_tobe_command(services[name]["command"]).name == "serve", name
        assert healthcheck_argv(services[name]) == image_healthcheck(), name
        assert env(cluster, name)["TOBE_SERVICE"] == services[name]["command"][1], name
        assert services[name]["restart"] == "unless-stopped", name
    order = startup_order(services)
    assert order.index("postgres") < order.index("mind-a") < order.index("mind-b")
    assert cluster["name"] != single["name"], "the two deployments would share volumes"


def test_postgresql_is_the_official_image_at_one_major_version_the_doctor_accepts(
    cluster: dict,
) -> None:
    postgres = cluster["services"]["postgres"]
    match = re.fullmatch(r"postgres:(\d+)", postgres["image"])
    assert match, postgres["image"]
    assert int(match.group(1)) >= MINIMUM_VERSION
    # Its data directory up to 17 (18 moved it), on a named volume; nothing published.
    assert int(match.group(1)) <= 17
    [data] = mounts_of(postgres)
    assert (data.target, data.read_only) == ("/var/lib/postgresql/data", False)
    assert data.volume in cluster["volumes"]
    assert "ports" not in postgres
    # Ready means ready on TCP, for the role and database the Minds use.
    server = postgres["environment"]
    test = postgres["healthcheck"]["test"]
    assert test[:2] == ["CMD", "pg_isready"]
    assert {"--host=127.0.0.1", f"--username={server['POSTGRES_USER']}"} <= set(test)
    assert f"--dbname={server['POSTGRES_DB']}" in test
    # TLS with the certificate the image ships, so the Minds can require it.
    command = " ".join(postgres["command"])
    assert command.startswith("postgres -c ssl=on ")
    assert "ssl_cert_file=/etc/ssl/certs/ssl-cert-snakeoil.pem" in command
    assert "ssl_key_file=/etc/ssl/private/ssl-cert-snakeoil.key" in command


def test_each_mind_stores_in_the_postgres_service_as_its_role_over_tls(
    cluster: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = cluster["services"]["postgres"]["environment"]
    for name in minds(cluster):
        url = sync_url(settings_of(cluster, name, monkeypatch).store_url)
        assert (url.host, url.port, url.database) == ("postgres", 5432, server["POSTGRES_DB"])
        assert url.username == server["POSTGRES_USER"]
        assert url.query == {"sslmode": "require"}
        # No password in the URL (printed by `tobe doctor`, `tobe backup`): libpq reads it.
        assert url.password is None
        assert env(cluster, name)["PGPASSWORD"] == server["POSTGRES_PASSWORD"]
        depends = cluster["services"][name]["depends_on"]
        assert depends["postgres"] == {"condition": "service_healthy"}, name


def test_the_database_password_comes_from_docker_env_with_a_default_for_local_use_only() -> None:
    """Every password in the file is POSTGRES_PASSWORD of docker/.env, which the example
    documents empty; unset, the default is the one docs/cluster.md calls local-only."""
    raw = CLUSTER_FILE.read_text()
    values = re.findall(
        r"^\s*(?:[A-Z_]*PASSWORD[A-Z_]*|x-postgres-password):\s*(?:&\S+\s+)?(.+)$", raw, re.M
    )
    assert len(values) == 3
    assert set(values) <= {f'"${{POSTGRES_PASSWORD:-{LOCAL_ONLY_PASSWORD}}}"', "*postgres-password"}
    documented = [
        block for block in example_blocks(ENV_EXAMPLE).values() if "POSTGRES_PASSWORD" in block
    ]
    assert documented == [{"POSTGRES_PASSWORD": ""}]
    assert LOCAL_ONLY_PASSWORD in (REPO / "docs" / "cluster.md").read_text()

    chosen = render([CLUSTER_FILE], {**dotenv(), "POSTGRES_PASSWORD": "s3cret"})["services"]
    assert chosen["postgres"]["environment"]["POSTGRES_PASSWORD"] == "s3cret"
    assert {environment_of(chosen[name])["PGPASSWORD"] for name in ("mind-a", "mind-b")} == {
        "s3cret"
    }
    unset = render([CLUSTER_FILE], dotenv())["services"]
    assert unset["postgres"]["environment"]["POSTGRES_PASSWORD"] == LOCAL_ONLY_PASSWORD


def test_each_mind_has_its_own_node_id_data_volume_and_an_address_the_others_dial(
    cluster: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids, volumes = set(), set()
    for name in minds(cluster):
        settings = settings_of(cluster, name, monkeypatch)
        ids.add(settings.mind.node_id)
        [data] = [m for m in mounts_of(cluster["services"][name]) if m.target == "/data"]
        assert data.volume in cluster["volumes"] and not data.read_only
        volumes.add(data.volume)
        # The others reach it by its service name on the port it listens on.
        port = settings.mind.listen.rpartition(":")[2]
        assert settings.mind.advertise_address == f"{name}:{port}"
        # What `tobe doctor` says in its container.
        finding = cluster_finding(settings)
        assert finding.status is Status.OK, finding
        assert finding.text == (f"node {name}, reached at {name}:{port} ([mind] advertise_address)")
    assert ids == {"mind-a", "mind-b"} and len(volumes) == 2


def test_one_mind_provisions_the_credentials_and_everything_else_waits_for_it(
    cluster: dict,
) -> None:
    """The credentials are in the shared database: two Minds provisioning would replace each
    other's token files. The provisioning Mind also creates or migrates the schema first."""
    services = cluster["services"]
    first = provisioner(cluster)
    assert first == "mind-a" == startup_order(services)[1]
    directory = env(cluster, first)["TOBE_PROVISION_DIR"]
    provisioned = {m.volume: m.target for m in mounts_of(services[first])}
    for name in ("face", "hand", "awareness"):
        volume = f"{name}-credentials"
        assert provisioned[volume] == f"{directory}/{name}"
        mounted = [m for m in mounts_of(services[name]) if m.volume.endswith("-credentials")]
        assert [(m.volume, m.target, m.read_only) for m in mounted] == [
            (volume, "/data/credentials", True)
        ]
    for name in set(services) - {"postgres", first}:
        assert services[name]["depends_on"][first] == {"condition": "service_healthy"}, name
    for name in set(minds(cluster)) - {first}:
        assert not PROVISIONING & set(env(cluster, name)), name
        # Only the Awareness link token, which it reads and never writes.
        mounted = [m for m in mounts_of(services[name]) if m.volume.endswith("-credentials")]
        assert [(m.volume, m.target, m.read_only) for m in mounted] == [
            ("awareness-credentials", f"{directory}/awareness", True)
        ]


def test_the_face_and_awareness_are_given_every_mind_and_the_hand_one(
    cluster: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    advertised = [
        settings_of(cluster, name, monkeypatch).mind.advertise_address for name in minds(cluster)
    ]
    assert settings_of(cluster, "face", monkeypatch).face.minds == advertised
    first = settings_of(cluster, provisioner(cluster), monkeypatch)
    assert settings_of(cluster, "hand", monkeypatch).hand.mind_address == (
        first.mind.advertise_address
    )
    awareness = settings_of(cluster, "awareness", monkeypatch).awareness.listen
    assert first.mind.awareness_address == f"awareness:{awareness.rpartition(':')[2]}"
    # Every Mind follows Awareness's observations (each delivers those of the conversations
    # it owns), with the link token the provisioning Mind made.
    link = awareness_token_file(Path(env(cluster, provisioner(cluster))["TOBE_PROVISION_DIR"]))
    for name in set(minds(cluster)) - {provisioner(cluster)}:
        settings = settings_of(cluster, name, monkeypatch)
        assert settings.mind.awareness_address == first.mind.awareness_address, name
        assert settings.awareness.token_file == link, name


def _differences(one: dict[str, Any], other: dict[str, Any]) -> set[str]:
    """The keys whose values differ, `environment` compared key by key (`environment.KEY`)."""
    found = {
        key
        for key in one.keys() | other.keys()
        if key != "environment" and one.get(key) != other.get(key)
    }
    mine, theirs = environment_of(one), environment_of(other)
    found |= {
        f"environment.{key}"
        for key in mine.keys() | theirs.keys()
        if mine.get(key) != theirs.get(key)
    }
    return found


def test_the_services_beside_the_minds_are_the_single_mind_files_but_for_the_minds_they_follow(
    cluster: dict, single: dict
) -> None:
    for name, changed in CHANGED_ENVIRONMENT.items():
        expected = {"depends_on", *(f"environment.{key}" for key in changed)}
        assert _differences(cluster["services"][name], single["services"][name]) == expected, name


def test_each_mind_is_the_single_mind_files_but_for_its_store_node_and_volumes(
    cluster: dict, single: dict
) -> None:
    mind = single["services"]["mind"]
    first = provisioner(cluster)
    cluster_only = {f"environment.{key}" for key in MIND_ENVIRONMENT}
    for name in minds(cluster):
        expected = {"depends_on", "volumes", "ports", *cluster_only}
        if name != first:
            # Neither builds the image nor provisions; never pulls the image mind-a builds;
            # reads the Awareness link token where mind-a provisioned it.
            expected |= {"build", "pull_policy", *(f"environment.{k}" for k in PROVISIONING)}
            expected |= {"environment.TOBE_AWARENESS__TOKEN_FILE"}
        else:
            expected -= {"ports"}
        assert _differences(cluster["services"][name], mind) == expected, name


def test_only_loopback_ports_are_published_each_mind_on_its_own(
    cluster: dict, single: dict
) -> None:
    services = cluster["services"]
    for name, service in services.items():
        for entry in service.get("ports") or []:
            assert str(entry).startswith("127.0.0.1:"), f"{name} publishes {entry}"
    published = [entry for name in minds(cluster) for entry in services[name]["ports"]]
    assert published == ["127.0.0.1:7410:7410", "127.0.0.1:7411:7410"]
    assert services["face"]["ports"] == single["services"]["face"]["ports"]


def test_the_minds_share_one_tls_directory_for_one_certificate_naming_both(cluster: dict) -> None:
    tls = {
        name: [m for m in mounts_of(cluster["services"][name]) if m.target == "/data/tls"]
        for name in minds(cluster)
    }
    assert {mount.volume for mounts in tls.values() for mount in mounts} == {"mind-tls"}
    assert all(len(mounts) == 1 for mounts in tls.values())
    [init] = [c for c in compose_commands(CLUSTER_FILE.read_text()) if "tls init" in c]
    hosts = shlex.split(init)[shlex.split(init).index("init") + 1 :][1::2]
    assert set(minds(cluster)) <= set(hosts)


def test_the_tobe_services_run_the_project_image_built_once_by_mind_a(
    cluster: dict, single: dict
) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    services = cluster["services"]
    for name in set(services) - {"postgres"}:
        assert services[name]["image"] == f"tobe:{version}" == single["services"]["face"]["image"]
        assert ("build" in services[name]) == (name == "mind-a"), name
        if name != "mind-a":
            assert services[name]["pull_policy"] == "never", name
    assert services["mind-a"]["build"] == single["services"]["mind"]["build"]


def test_provider_settings_reach_only_the_minds(cluster: dict) -> None:
    for name, service in cluster["services"].items():
        own = [".env"] if name in minds(cluster) else []
        assert env_files_of(service) == (["channels.env"] if name == "channels" else own), name


def _image_directories() -> set[str]:
    """The directories the image creates for its user (`mkdir -p …` before `chown`)."""
    runs = " && ".join(
        args for instruction, args in dockerfile_final_stage() if instruction == "RUN"
    )
    made: set[str] = set()
    for part in runs.split("&&"):
        words = shlex.split(part.replace("\\", " "))
        if words[:2] == ["mkdir", "-p"]:
            made.update(words[2:])
    return made | {str(parent) for path in made for parent in Path(path).parents}


@pytest.mark.parametrize("path", [COMPOSE_FILE, CLUSTER_FILE], ids=["one", "two"])
def test_every_volume_a_tobe_service_mounts_starts_out_as_its_users_directory(path: Path) -> None:
    """A new named volume copies its mount point from the image: one the image does not
    create would belong to root, and the service (uid 10001) could not write it."""
    compose = load_compose(path)
    made = _image_directories()
    for name, service in compose["services"].items():
        if not service["image"].startswith("tobe:"):
            continue
        for mount in mounts_of(service):
            assert mount.target in made, f"{name}: {mount.target} is not made by the image"


def _services_named(command: str) -> list[str]:
    """The services a `docker compose … exec/logs/restart …` command names."""
    words = shlex.split(command, comments=True)[2:]
    while words and words[0].startswith("-"):
        words = words[2:]
    subcommand, arguments = words[0], [w for w in words[1:] if not w.startswith("-")]
    if subcommand == "exec":
        return arguments[:1]
    if subcommand in ("logs", "restart", "stop", "start", "ps"):
        return arguments
    return []


def test_every_documented_command_names_services_of_the_file_it_runs() -> None:
    documents = [
        REPO / "README.md",
        *sorted((REPO / "docs").glob("*.md")),
        COMPOSE_FILE,
        CLUSTER_FILE,
    ]
    checked = 0
    for document in documents:
        for command in compose_commands(document.read_text()):
            files = compose_files(command)
            if not files:
                continue
            services = render([REPO / file for file in files], dotenv())["services"]
            for name in _services_named(command):
                assert name in services, f"{document.name}: {command}"
                checked += 1
    assert checked
