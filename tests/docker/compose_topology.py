"""Reading docker/compose.yaml and the Dockerfile, and running the compose topology without Docker.

`LocalTopology` plays what Docker would do, with local processes:

- each service gets a root directory standing for its container filesystem; a named volume is a
  directory shared by every service that mounts it, linked into each root at its mount point;
- its environment is the image's `ENV`, then `env_file`, then `environment` (compose order);
- container paths (`/data`, `/credentials/...`, `unix:/data/...`) become paths under its root,
  and addresses (`0.0.0.0:7410`, `mind:7410`) become loopback ports, one free port per
  (service, container port), so two services may use the same port number as in containers;
- `tobe ...` commands run as `python -m tobe ...` with this interpreter, and so does `tobe`
  when a program the image installs (its health check script) runs it;
- a service without a health check `test` of its own runs the image's HEALTHCHECK;
- services start in `depends_on` order, each once all it depends on pass their health checks.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pytest
from compose_render import render
from helpers.eventually import eventually
from helpers.ports import free_port

from tobe.config import Settings, load_settings

REPO = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO / "docker"
COMPOSE_FILE = DOCKER_DIR / "compose.yaml"
# Two Minds on one PostgreSQL database (docs/cluster.md), run on its own.
CLUSTER_FILE = DOCKER_DIR / "compose.cluster.yaml"
DOCKERFILE = DOCKER_DIR / "Dockerfile"
ENV_EXAMPLE = DOCKER_DIR / ".env.example"
DOCKERIGNORE = REPO / ".dockerignore"
COMPOSE_SCHEMA = REPO.parent / "shared" / "schemas" / "compose-spec.json"

HEALTH_DEADLINE = 90.0
STOP_GRACE = 20.0
LOOPBACK_HOSTS = {"0.0.0.0", "127.0.0.1", "localhost", "[::]", "[::1]"}
ADDRESS = re.compile(r"(?P<host>\[[0-9A-Fa-f:]*\]|[A-Za-z0-9_.\-]+):(?P<port>\d{1,5})")
PROGRAM_DIR = "/usr/local/bin/"
COMMENTED_SETTING = re.compile(r"[A-Z][A-Z0-9_]*=\S*")
# Variables of the test runner's own environment a container would not have.
HOST_ONLY = ("TOBE_", "XDG_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_API_KEY")


def load_compose(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    """docker/compose.yaml (or `path`) as Compose renders it with the example standing for
    docker/.env."""
    return render([path], read_env_file(ENV_EXAMPLE))


def services_running(compose: dict[str, Any], process: str) -> list[str]:
    """The services whose command is `tobe <process> serve`, in file order."""
    return [
        name
        for name, service in compose["services"].items()
        if list(service.get("command") or [])[:3] == ["tobe", process, "serve"]
    ]


def dockerfile_final_stage(text: str | None = None) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile's last stage, continuation lines joined."""
    text = DOCKERFILE.read_text() if text is None else text
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        logical.append(pending + line)
        pending = ""
    stage: list[tuple[str, str]] = []
    for line in logical:
        instruction, _, arguments = line.partition(" ")
        if instruction.upper() == "FROM":
            stage = []
        stage.append((instruction.upper(), arguments.strip()))
    return stage


def image_environment() -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction, arguments in dockerfile_final_stage():
        if instruction == "ENV":
            for pair in shlex.split(arguments):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def image_healthcheck() -> list[str]:
    """The exec-form command of the image's HEALTHCHECK."""
    [check] = [
        args for instruction, args in dockerfile_final_stage() if instruction == "HEALTHCHECK"
    ]
    _options, separator, command = check.partition("CMD ")
    assert separator, f"HEALTHCHECK without CMD: {check}"
    argv = json.loads(command)
    assert isinstance(argv, list), f"HEALTHCHECK must be exec form: {check}"
    return argv


def image_programs() -> dict[str, Path]:
    """Programs the image installs from the repository: {name on PATH: source file}."""
    programs: dict[str, Path] = {}
    for instruction, arguments in dockerfile_final_stage():
        words = [word for word in arguments.split() if not word.startswith("--")]
        if instruction == "COPY" and len(words) == 2 and words[1].startswith(PROGRAM_DIR):
            programs[words[1].removeprefix(PROGRAM_DIR)] = REPO / words[0]
    return programs


def image_workdir() -> str:
    workdirs = [args for instruction, args in dockerfile_final_stage() if instruction == "WORKDIR"]
    return workdirs[-1] if workdirs else "/"


def read_env_file(path: Path) -> dict[str, str]:
    """The `KEY=VALUE` lines of a compose env file (comments and blank lines skipped)."""
    values: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, separator, value = line.partition("=")
        assert separator, f"{path}: not KEY=VALUE: {raw!r}"
        values[key.strip()] = _unquoted(value.strip())
    return values


def example_blocks(path: Path) -> dict[str, dict[str, str]]:
    """The commented-out `# KEY=VALUE` blocks of an env file, by the first line of the comment
    above them (e.g. "Anthropic"): what an operator gets by uncommenting one."""
    blocks: dict[str, dict[str, str]] = {}
    title = ""
    for raw in path.read_text().splitlines():
        line = raw.removeprefix("#").strip()
        if not raw.strip():
            title = ""
        elif raw.startswith("#") and COMMENTED_SETTING.fullmatch(line):
            key, _, value = line.partition("=")
            blocks.setdefault(title, {})[key] = _unquoted(value.strip())
        elif raw.startswith("#") and not title:
            title = line
    return blocks


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def environment_of(service: dict[str, Any]) -> dict[str, str]:
    declared = service.get("environment") or {}
    if isinstance(declared, list):
        declared = dict(item.partition("=")[::2] for item in declared)
    return {key: str(value) for key, value in declared.items()}


def env_files_of(service: dict[str, Any]) -> list[str]:
    files = service.get("env_file") or []
    files = [files] if isinstance(files, str | dict) else files
    return [item["path"] if isinstance(item, dict) else item for item in files]


def healthcheck_argv(service: dict[str, Any]) -> list[str]:
    """The service's own health check command, else the image's."""
    test = service["healthcheck"].get("test")
    if test is None:
        return image_healthcheck()
    assert isinstance(test, list) and test[0] == "CMD", f"health check must be exec form: {test}"
    return list(test[1:])


def resolve_tobe_command(argv: list[str]) -> click.Command:
    """The click command `argv` (starting with `tobe`) runs; its options are parsed for real."""
    from tobe.cli import main

    assert argv and argv[0] == "tobe", f"not a tobe command: {argv}"
    command: click.Command = main
    words = list(argv[1:])
    path = ["tobe"]
    while isinstance(command, click.Group):
        assert words, f"{' '.join(argv)}: names a group, not a command"
        name = words.pop(0)
        found = command.get_command(click.Context(command, info_name=path[-1]), name)
        assert found is not None, f"{' '.join(path)} has no subcommand {name!r}"
        command = found
        path.append(name)
    # Unknown options, missing values or bad types raise here, as they would at start.
    command.make_context(" ".join(path), words)
    return command


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


def startup_order(services: dict[str, Any]) -> list[str]:
    """Service names so that each comes after everything it depends on."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order:
            return
        assert name not in visiting, f"depends_on cycle through {name}"
        visiting.add(name)
        for dependency in services[name].get("depends_on") or {}:
            visit(dependency)
        visiting.discard(name)
        order.append(name)

    for name in services:
        visit(name)
    return order


@dataclass
class Mount:
    volume: str
    target: str
    read_only: bool


def mounts_of(service: dict[str, Any]) -> list[Mount]:
    found = []
    for entry in service.get("volumes") or []:
        assert isinstance(entry, str), f"use the short volume syntax: {entry}"
        source, target, *mode = entry.split(":")
        found.append(Mount(source, target, mode == ["ro"]))
    return found


@dataclass
class Container:
    name: str
    root: Path
    argv: list[str]
    env: dict[str, str]
    health: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def log_tail(self, lines: int = 40) -> str:
        with self.log_path.open(errors="replace") as handle:
            return "".join(deque(handle, maxlen=lines))


@dataclass
class LocalTopology:
    compose: dict[str, Any]
    workdir: Path
    # Settings the test adds to a service after mapping (host paths, e.g. a provider script).
    overrides: dict[str, dict[str, str]] = field(default_factory=dict)
    ports: dict[tuple[str, int], int] = field(default_factory=dict)
    containers: dict[str, Container] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)

    @property
    def services(self) -> dict[str, Any]:
        return self.compose["services"]

    def volume(self, name: str) -> Path:
        assert name in (self.compose.get("volumes") or {}), f"{name} is not a named volume"
        path = self.workdir / "volumes" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def bin_dir(self) -> Path:
        """A `tobe` on PATH for the image's programs: `python -m tobe` with this interpreter."""
        path = self.workdir / "bin"
        if not path.exists():
            path.mkdir(parents=True)
            shim = path / "tobe"
            shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m tobe "$@"\n')
            shim.chmod(0o755)
        return path

    def port(self, service: str, container_port: int) -> int:
        key = (service, container_port)
        if key not in self.ports:
            self.ports[key] = free_port()
        return self.ports[key]

    def published(self, service: str, container_port: int) -> str:
        """The loopback address a published container port is reached at from the host."""
        for entry in self.services[service].get("ports") or []:
            host_ip, host_port, target = str(entry).split(":")
            if int(target) == container_port:
                assert host_ip == "127.0.0.1", f"{service} publishes {entry} beyond loopback"
                return f"127.0.0.1:{self.port(service, container_port)}"
        raise AssertionError(f"{service} does not publish port {container_port}")

    def map_value(self, service: str, value: str) -> str:
        root = self.workdir / "containers" / service
        if value.startswith("unix:/"):
            return "unix:" + str(root) + value.removeprefix("unix:")
        address = ADDRESS.fullmatch(value)
        if address:
            host = address["host"]
            owner = service if host in LOOPBACK_HOSTS else host
            if owner in self.services:
                return f"127.0.0.1:{self.port(owner, int(address['port']))}"
            return value
        if value.startswith("/"):
            return str(root) + value
        return value

    def prepare(self, name: str) -> Container:
        service = self.services[name]
        root = self.workdir / "containers" / name
        root.mkdir(parents=True, exist_ok=True)
        for mount in mounts_of(service):
            link = root / mount.target.lstrip("/")
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(self.volume(mount.volume), target_is_directory=True)
        home = root / image_workdir().lstrip("/")
        home.mkdir(parents=True, exist_ok=True)
        env = dict(image_environment())
        for env_file in env_files_of(service):
            # The documented example stands for the operator's .env.
            source = ENV_EXAMPLE if env_file == ".env" else DOCKER_DIR / env_file
            env.update(read_env_file(source))
        env.update(environment_of(service))
        env = {key: self.map_value(name, value) for key, value in env.items()}
        env.update(self.overrides.get(name, {}))
        base = {k: v for k, v in os.environ.items() if not k.startswith(HOST_ONLY)}
        base["HOME"] = str(home)
        base["PATH"] = f"{self.bin_dir()}{os.pathsep}{base.get('PATH', '')}"
        argv = [self.map_value(name, word) for word in service["command"]]
        health = [self.map_value(name, word) for word in healthcheck_argv(service)]
        logs = self.workdir / "logs"
        logs.mkdir(exist_ok=True)
        return Container(name, root, argv, {**base, **env}, health, logs / f"{name}.log")

    def start(self, name: str) -> Container:
        for dependency, rule in (self.services[name].get("depends_on") or {}).items():
            assert rule["condition"] == "service_healthy", f"{name} -> {dependency}: {rule}"
            assert dependency in self.started, f"{name} starts before {dependency}"
        container = self.prepare(name)
        with container.log_path.open("ab") as log:
            container.process = subprocess.Popen(
                _python_tobe(container.argv),
                cwd=container.root / image_workdir().lstrip("/"),
                env=container.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.containers[name] = container
        self.started.append(name)
        return container

    def exec_in(self, name: str, argv: list[str]) -> tuple[list[str], dict[str, str], Path]:
        """`docker compose exec <name> <argv>`: the command, environment and working directory
        to run it with locally, in the running service's container."""
        container = self.containers[name]
        command = _image_command([self.map_value(name, word) for word in argv])
        return command, dict(container.env), container.root / image_workdir().lstrip("/")

    def wait_healthy(self, container: Container) -> None:
        """Run the service's health check until it passes; fail if the service exits."""
        eventually(
            lambda: self._health_check(container),
            HEALTH_DEADLINE,
            until=lambda check: check.returncode == 0,
            what=f"{container.name} healthy",
            context=container.log_tail,
            interval=0.2,
        )

    @staticmethod
    def _health_check(container: Container) -> subprocess.CompletedProcess[str]:
        """One run of the service's health check; a service that exited fails at once."""
        assert container.process is not None
        code = container.process.poll()
        if code is not None:
            raise AssertionError(
                f"{container.name} exited with {code} before it was healthy:\n"
                + container.log_tail()
            )
        return subprocess.run(
            _image_command(container.health),
            env=container.env,
            capture_output=True,
            text=True,
            timeout=30,
        )

    def up(self) -> None:
        """`docker compose up`: every service but those behind a profile (`channels`)."""
        for name in startup_order(self.services):
            if not self.services[name].get("profiles"):
                self.wait_healthy(self.start(name))

    def down(self) -> dict[str, int]:
        """SIGTERM in reverse start order (SIGKILL after a grace); returns the exit codes."""
        codes: dict[str, int] = {}
        for name in reversed(self.started):
            process = self.containers[name].process
            assert process is not None
            if process.poll() is None:
                _signal_group(process.pid, signal.SIGTERM)
                try:
                    process.wait(STOP_GRACE)
                except subprocess.TimeoutExpired:
                    _signal_group(process.pid, signal.SIGKILL)
                    process.wait()
            _signal_group(process.pid, signal.SIGKILL)
            codes[name] = process.returncode
        self.started.clear()
        return codes


def _image_command(argv: list[str]) -> list[str]:
    """A command as the container would run it: `tobe …` or a program the image installs."""
    programs = image_programs()
    if argv[0] in programs:
        return [*program_interpreter(programs[argv[0]]), str(programs[argv[0]]), *argv[1:]]
    return _python_tobe(argv)


def program_interpreter(script: Path) -> list[str]:
    """The interpreter of a script's `#!` line (`bash` for `#!/bin/bash`), found on PATH."""
    first = script.read_text().splitlines()[0]
    assert first.startswith("#!"), f"{script} has no #! line"
    interpreter, *arguments = first.removeprefix("#!").split()
    return [Path(interpreter).name, *arguments]


def _python_tobe(argv: list[str]) -> list[str]:
    assert argv[0] == "tobe", f"not a tobe command: {argv}"
    return [sys.executable, "-m", "tobe", *argv[1:]]


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_is_empty(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False
